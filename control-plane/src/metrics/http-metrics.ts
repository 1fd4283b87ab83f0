// Counts every answered request by route template (the router's, so no id is a label value), method and status, and
// the refused ones by reason; an upload's PUT adds its bytes, an accepted epoch_end one epoch.
import type { Middleware } from 'koa';
import type { AppState } from '../http/app-context.ts';
import { REFUSED_REASONS, type AppMetrics } from './app-metrics.ts';

const UPLOAD_ROUTE = '/api/upload/sessions/:sessionId/file';
const TRAINING_EVENTS_ROUTE = '/api/webhooks/training/metrics';

export function httpMetrics(metrics: AppMetrics): Middleware<AppState> {
  // Each label set's child is made once, not per request; prom-client still validates and hashes the label values on
  // every inc and observe (its children call the parent with their labels): about 0.5 µs a request, measured.
  // The sets are bounded (route templates × methods × statuses).
  const counted = new Map<string, { inc: () => void }>();
  const timed = new Map<string, { observe: (seconds: number) => void }>();
  const count = (method: string, route: string, status: string) => {
    const key = `${method} ${route} ${status}`;
    let series = counted.get(key);
    if (!series) counted.set(key, (series = metrics.httpRequests.labels(method, route, status)));
    series.inc();
  };
  const time = (method: string, route: string, seconds: number) => {
    const key = `${method} ${route}`;
    let series = timed.get(key);
    if (!series) timed.set(key, (series = metrics.httpSeconds.labels(method, route)));
    series.observe(seconds);
  };
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      // Paths no route took (the console's pages and files, 404s) are one label value, not one each.
      const route = ctx.state.route ?? (ctx.path.startsWith('/api/') ? 'unmatched' : 'other');
      const status = ctx.status;
      count(ctx.method, route, String(status));
      time(ctx.method, route, (performance.now() - started) / 1000);
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
