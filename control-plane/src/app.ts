import type { Orm } from './db/orm.ts';
import type { AppConfig } from '@vp/config';
import Koa from 'koa';
import type { Logger } from 'pino';
import { forgetFiguresOnWrite } from './account/summary-figures.ts';
import { auditTrail } from './audit/audit-trail.ts';
import type { Authenticator } from './auth/authenticator.ts';
import { consoleAssets } from './console/console-assets.ts';
import { serviceUrl } from './deployments/deployment-service-url.ts';
import type { AppState } from './http/app-context.ts';
import type { RouteDefinition } from './http/define-route.ts';
import { docsMiddleware } from './http/docs.ts';
import { errorMiddleware } from './http/error-middleware.ts';
import { buildOpenApi, stableStringify } from './http/openapi.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import { requestContext } from './http/request-context.ts';
import { JSON_FIELDS_LIMIT_BYTES, jsonBody } from './http/json-body.ts';
import { buildRouter } from './http/router.ts';
import type { AppMetrics } from './metrics/app-metrics.ts';
import type { ScrapeFigures } from './metrics/figures.ts';
import { httpMetrics } from './metrics/http-metrics.ts';
import { metricsEndpoint } from './metrics/metrics-endpoint.ts';
import { routes as allRoutes } from './routes.ts';
import { Services, type ServiceDeps } from './services.ts';

export const API_VERSION = '0.1.0';

export interface AppDeps extends ServiceDeps {
  config: AppConfig;
  orm: Orm;
  log: Logger;
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  /** Defaults to every API route. */
  routes?: RouteDefinition[];
  /** The process's Prometheus metrics and what a scrape reads (GET /metrics); absent: neither is served. */
  metrics?: AppMetrics;
  scrapeFigures?: ScrapeFigures;
}

export function openApiDocument(routes: RouteDefinition[] = allRoutes): string {
  return stableStringify(buildOpenApi(routes, API_VERSION));
}

/**
 * The Koa middleware order, nothing else: context → (request metrics) → (the audit trail) → errors → docs → the console (pages, assets) →
 * the model page the trainer links to → ORM fork → (GET /metrics) → (summary figures after writes) → deployments' service URLs (outside /api and its limits) → routes (which parse their
 * own bodies).
 */
export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: deps.config.trustProxy });
  // What fails after the answer began (a streamed body that broke off: the response is cut short) goes to the log.
  app.on('error', (error: Error, ctx?: Koa.ParameterizedContext<AppState>) =>
    (ctx?.state.log ?? deps.log).warn({ err: error }, 'a response broke off'),
  );
  const routes = deps.routes ?? allRoutes;
  let document: string | undefined;
  app.use(requestContext(deps.log));
  // Outside the error middleware: it counts the status the error was answered with.
  if (deps.metrics) app.use(httpMetrics(deps.metrics));
  // Outside the error middleware too: a refused change is recorded with its status.
  if (deps.audit) app.use(auditTrail(deps.audit));
  app.use(errorMiddleware());
  app.use(docsMiddleware(() => (document ??= openApiDocument(routes))));
  app.use(consoleAssets(deps.storage?.store.directOrigin));
  app.use(async (ctx, next) => {
    const services = new Services(() => deps.orm.em.fork() as AppState['em'], deps);
    ctx.state.services = services;
    Object.defineProperty(ctx.state, 'em', { get: () => services.em, enumerable: true });
    await next();
  });
  if (deps.metrics && deps.scrapeFigures && deps.config.metricsToken)
    app.use(metricsEndpoint(deps.config.metricsToken, deps.metrics, deps.scrapeFigures));
  if (deps.summaryFigures) app.use(forgetFiguresOnWrite(deps.summaryFigures));
  if (deps.deploymentTraffic)
    app.use(serviceUrl({ authenticator: deps.authenticator, traffic: deps.deploymentTraffic }));
  const limit = deps.config.jsonBodyLimitBytes;
  const jsonBodies = {
    fields: jsonBody(Math.min(JSON_FIELDS_LIMIT_BYTES, limit)),
    documents: jsonBody(limit, 'JSON_BODY_LIMIT_BYTES'),
  };
  for (const middleware of buildRouter(routes, { ...deps, jsonBody: jsonBodies })) app.use(middleware);
  return app;
}
