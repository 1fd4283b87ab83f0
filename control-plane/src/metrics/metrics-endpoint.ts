// GET /metrics: the Prometheus exposition of this control plane, for the scraper holding METRICS_TOKEN (installed only
// when it is set: unset, the path is the console's 404). API keys and console sessions never reach it (it is outside
// /api and its authentication).
import { timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { AppState } from '../http/app-context.ts';
import type { AppMetrics } from './app-metrics.ts';
import type { ScrapeFigures } from './figures.ts';

const tokenMatches = (given: string, token: string) => {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
};

export function metricsEndpoint(token: string, metrics: AppMetrics, figures: ScrapeFigures): Middleware<AppState> {
  return async (ctx, next) => {
    if (ctx.path !== '/metrics') {
      await next();
      return;
    }
    const given = /^Bearer (.+)$/i.exec(ctx.get('authorization'))?.[1] ?? '';
    if (!tokenMatches(given, token)) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      ctx.body = { error: 'The metrics need the scrape token (METRICS_TOKEN) as a bearer token' };
      return;
    }
    const hosts = await figures.refresh(ctx.state.em);
    ctx.set('Content-Type', metrics.registry.contentType);
    ctx.body = `${await metrics.registry.metrics()}\n${hosts}`;
  };
}
