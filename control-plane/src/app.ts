import type { Orm } from './db/orm.ts';
import type { AppConfig } from '@vp/config';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import type { Logger } from 'pino';
import type { Authenticator } from './auth/authenticator.ts';
import type { AppState } from './http/app-context.ts';
import type { RouteDefinition } from './http/define-route.ts';
import { docsMiddleware } from './http/docs.ts';
import { errorMiddleware } from './http/error-middleware.ts';
import { HttpError } from './http/errors.ts';
import { buildOpenApi, stableStringify } from './http/openapi.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import { requestContext } from './http/request-context.ts';
import { buildRouter } from './http/router.ts';
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
}

export function openApiDocument(routes: RouteDefinition[] = allRoutes): string {
  return stableStringify(buildOpenApi(routes, API_VERSION));
}

/** The Koa middleware order, nothing else: context → errors → docs → body → ORM fork → routes. */
export function createApp(deps: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>({ proxy: deps.config.trustProxy });
  const routes = deps.routes ?? allRoutes;
  let document: string | undefined;
  app.use(requestContext(deps.log));
  app.use(errorMiddleware());
  app.use(docsMiddleware(() => (document ??= openApiDocument(routes))));
  app.use(
    koaBody({
      jsonLimit: deps.config.jsonBodyLimitBytes,
      jsonStrict: true,
      multipart: false,
      urlencoded: false,
      text: false,
      onError: (error) => {
        const status = (error as { status?: number }).status;
        if (status === 413) throw new HttpError(413, `Request body larger than ${deps.config.jsonBodyLimitBytes} bytes`);
        throw new HttpError(400, 'Malformed JSON body');
      },
    }),
  );
  app.use(async (ctx, next) => {
    const em = deps.orm.em.fork();
    ctx.state.em = em as AppState['em'];
    ctx.state.services = new Services(ctx.state.em, deps);
    await next();
  });
  for (const middleware of buildRouter(routes, deps)) app.use(middleware);
  return app;
}
