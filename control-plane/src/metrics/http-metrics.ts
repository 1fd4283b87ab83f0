// Counts every answered request by route template (the router's, so no id is a label value), method and status, and
// the refused ones by reason; an upload's PUT adds its bytes, an accepted epoch_end one epoch.
import type { Middleware } from 'koa';
import type { AppState } from '../http/app-context.ts';
import { REFUSED_REASONS, type AppMetrics } from './app-metrics.ts';

const UPLOAD_ROUTE = '/api/upload/sessions/:sessionId/file';
const TRAINING_EVENTS_ROUTE = '/api/webhooks/training/metrics';

export function httpMetrics(metrics: AppMetrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      // Paths no route took (the console's pages and files, 404s) are one label value, not one each.
      const route = ctx.state.route ?? (ctx.path.startsWith('/api/') ? 'unmatched' : 'other');
      const status = ctx.status;
      metrics.httpRequests.inc({ method: ctx.method, route, status: String(status) });
      metrics.httpSeconds.observe({ method: ctx.method, route }, (performance.now() - started) / 1000);
      const refused = REFUSED_REASONS[status];
      if (refused) metrics.refused.inc({ reason: refused });
      if (status < 300) {
        if (route === UPLOAD_ROUTE) metrics.uploadBytes.inc(ctx.request.length ?? 0);
        const event = (ctx.request as { body?: { event?: unknown } }).body?.event;
        if (route === TRAINING_EVENTS_ROUTE && event === 'epoch_end') metrics.trainingEpochs.inc();
      }
    }
  };
}
