import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from './app-context.ts';

const INCOMING_ID = /^[\w.-]{8,64}$/;

/**
 * Request id (kept from X-Request-Id when sane), a child logger, and one access-log line per request.
 * Only the path is logged: never the query string or headers, where keys and signatures travel.
 */
export function requestContext(log: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    const incoming = ctx.get('x-request-id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : randomUUID();
    ctx.state.requestId = requestId;
    ctx.state.clientAddress = ctx.ip;
    ctx.state.log = log.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      const actor = ctx.state.actor;
      ctx.state.log.info(
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          durationMs: Math.round((performance.now() - started) * 100) / 100,
          ...(actor?.kind === 'key' ? { workspace: actor.workspaceHandle, keyPrefix: actor.keyPrefix } : {}),
        },
        'request',
      );
    }
  };
}
