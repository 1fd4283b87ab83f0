import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { z } from 'zod';
import { ANONYMOUS, type Actor } from '../auth/actor.ts';
import type { Authenticator } from '../auth/authenticator.ts';
import { bearerToken } from '../auth/key-format.ts';
import { authenticateSession } from '../auth/session-actor.ts';
import { CSRF_HEADER, SESSION_COOKIE } from '../auth/session-token.ts';
import { storableJsonProblem } from '../validation/storable-json.ts';
import type { AppContext, AppState } from './app-context.ts';
import type { RouteDefinition } from './define-route.ts';
import { describeZodError } from './error-middleware.ts';
import { Forbidden, HttpError, Invalid, MethodNotAllowed, NotFound, Unauthorized } from './errors.ts';
import type { RateLimiter } from './rate-limit.ts';

export interface RouterDeps {
  authenticator: Authenticator;
  rateLimiter: RateLimiter;
  /** JSON body parsers: `fields` (most operations), `documents` (routes that declare documentBody). */
  jsonBody: { fields: Middleware<AppState>; documents: Middleware<AppState> };
}

/**
 * Deepest nesting any request input may have: far beyond a real document, well inside what recursive code
 * (JSON.stringify, zod, the database driver) can walk. Free-form objects have tighter bounds of their own.
 */
const MAX_INPUT_DEPTH = 64;

function parseInput(schema: z.ZodType | undefined, value: unknown, location: string): unknown {
  if (!schema) return undefined;
  // Before the schema: text PostgreSQL cannot store (NUL, lone surrogates), in any field or key, is a 400 here.
  const problem = storableJsonProblem(value, MAX_INPUT_DEPTH);
  if (problem) throw Invalid(`${[location, ...problem.path].join('.')}: ${problem.message}`);
  const result = schema.safeParse(value ?? (location === 'body' ? undefined : {}));
  if (!result.success) throw new HttpError(400, describeZodError(result.error, location));
  return result.data;
}

async function resolveActor(route: RouteDefinition, ctx: AppContext, authenticator: Authenticator): Promise<Actor> {
  const key = bearerToken(ctx.get('authorization') || undefined);
  if (key === undefined) {
    // The console's session cookie (auth/session-actor.ts), only when no key is sent: a key always wins.
    const session = ctx.cookies.get(SESSION_COOKIE);
    if (session) {
      const required = route.auth === 'key';
      const csrfHeader = ctx.get(CSRF_HEADER) || undefined;
      const actor = await authenticateSession(ctx.state.em, session, { method: ctx.method, csrfHeader, required });
      if (actor) return actor;
    }
    if (route.auth === 'key') throw Unauthorized('Missing API key: send Authorization: Bearer <API_KEY>');
    return ANONYMOUS;
  }
  return authenticator.authenticate(key, ctx.state.clientAddress);
}

/** Runs one route: authenticate → rate-limit → parse and validate input → handler → validate output. */
function routeMiddleware(route: RouteDefinition, deps: RouterDeps): Middleware<AppState> {
  return async (ctx) => {
    ctx.state.route = route.path;
    const actor = route.auth === 'public' ? ANONYMOUS : await resolveActor(route, ctx, deps.authenticator);
    ctx.state.actor = actor;
    if (actor.kind === 'key' && actor.jobScope && !route.jobKeys)
      throw Forbidden('This key belongs to a training job and reaches only what that job needs');
    if (actor.kind === 'key' && actor.deploymentId && !route.deploymentKeys)
      throw Forbidden("This key belongs to a deployment and reaches only that deployment's predict and service URL");
    if (route.limit) {
      const subject = actor.kind === 'key' ? `key:${actor.keyId}` : `ip:${ctx.state.clientAddress}`;
      await deps.rateLimiter.take(subject, route.limit);
    }
    if (route.request?.body)
      await deps.jsonBody[route.documentBody ? 'documents' : 'fields'](ctx, async () => undefined);
    const input = {
      params: parseInput(route.request?.params, (ctx as unknown as { params: unknown }).params, 'path'),
      query: parseInput(route.request?.query, ctx.query, 'query'),
      body: parseInput(route.request?.body, ctx.request.body, 'body'),
    };
    const result = await route.handler(ctx, input as never);
    // Routes that stream (response.contentType set) write status, headers and body themselves.
    if (route.response.contentType) return;
    ctx.status = route.response.alternate?.when(result) ? route.response.alternate.status : route.response.status;
    // Output goes through its schema too, so nothing outside the documented shape (a hash, an internal path) leaks.
    ctx.body = route.response.schema.parse(result);
  };
}

export function buildRouter(routes: RouteDefinition[], deps: RouterDeps): Middleware<AppState>[] {
  const router = new Router<AppState>();
  for (const route of routes) {
    router.register(route.path, [route.method], routeMiddleware(route, deps) as never);
  }
  /** Unknown path → 404; known path, other method → 405 with Allow. */
  const fallback: Middleware<AppState> = async (ctx) => {
    const match = router.match(ctx.path, ctx.method);
    const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))];
    if (allowed.length > 0) throw MethodNotAllowed(allowed);
    throw NotFound(`No route for ${ctx.method} ${ctx.path}`);
  };
  return [router.routes() as unknown as Middleware<AppState>, fallback];
}
