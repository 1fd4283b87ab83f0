// A deployment's service URL, `<public base URL>/svc/<deploymentId>/predict`, `/health` and `/camera` (the camera's
// state and latest results, GET): its server reached with a key of the owner workspace or the deployment's own,
// outside /api and outside the platform's rate limits (as the spec says). The lean path: the body is streamed through
// unread (the server checks it), the answer passed back: held whole up to SERVICE_HOLD_BYTES (so a failure until then
// is still a status), streamed on past them, at most ANSWER_MAX_BYTES.
import type { EntityManager } from '@mikro-orm/postgresql';
import { Readable } from 'node:stream';
import type { Middleware } from 'koa';
import { SERVICE_ROUTES } from '@vp/inference-server/contract';
import type { Authenticator } from '../auth/authenticator.ts';
import { bearerToken } from '../auth/key-format.ts';
import type { AppState } from '../http/app-context.ts';
import { Forbidden, MethodNotAllowed, NotFound, Unauthorized } from '../http/errors.ts';
import { ANSWER_MAX_BYTES, SERVICE_HOLD_BYTES, predictAnswer } from './deployment-proxy.ts';
import type { DeploymentTraffic } from './deployment-traffic.ts';
import { workspaceOfDeployment } from './deployment-traffic.store.ts';

export const SERVICE_URL_PREFIX = '/svc/';
const SERVICE_PATH = /^\/svc\/([0-9a-f]{24})\/(predict|health|camera)$/;
/** Deployments whose workspace is remembered (it never changes); past this the memory starts over. */
const MAX_REMEMBERED = 10_000;

export function serviceUrl(deps: { authenticator: Authenticator; traffic: DeploymentTraffic }): Middleware<AppState> {
  const workspaces = new Map<string, string>();
  return async (ctx, next) => {
    if (!ctx.path.startsWith(SERVICE_URL_PREFIX)) {
      await next();
      return;
    }
    const match = SERVICE_PATH.exec(ctx.path);
    if (!match)
      throw NotFound(
        `No route for ${ctx.method} ${ctx.path}: a service URL answers /svc/{deploymentId}/predict, /health and /camera`,
      );
    const [, deploymentId, action] = match as unknown as [string, string, 'predict' | 'health' | 'camera'];
    const method = action === 'predict' ? 'POST' : 'GET';
    if (ctx.method !== method) throw MethodNotAllowed([method]);

    const key = bearerToken(ctx.get('authorization') || undefined);
    if (key === undefined)
      throw Unauthorized(
        "Missing API key: send Authorization: Bearer <API_KEY> (a key of the deployment's workspace or its own key)",
      );
    const actor = await deps.authenticator.authenticate(key, ctx.state.clientAddress);
    ctx.state.actor = actor;
    if (actor.jobScope) throw Forbidden('This key belongs to a training job and reaches only what that job needs');
    // Another workspace's deployment, or another deployment of a deployment key, does not exist for this key.
    if (
      actor.deploymentId
        ? actor.deploymentId !== deploymentId
        : (await workspaceOf(ctx.state.em, deploymentId)) !== actor.workspaceId
    )
      throw NotFound('Deployment not found');

    let received = 0;
    const answer = await deps.traffic.exchange(
      ctx.state.em,
      deploymentId,
      {
        method,
        route: SERVICE_ROUTES[action],
        maxBytes: ANSWER_MAX_BYTES,
        holdBytes: SERVICE_HOLD_BYTES,
        ...(method === 'POST' && {
          body: Readable.from(
            (async function* counted() {
              for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
                received += chunk.length;
                yield chunk;
              }
            })(),
            { objectMode: false },
          ),
          contentType: ctx.get('content-type') || undefined,
          contentLength: ctx.request.length,
        }),
      },
      {
        via: 'service',
        path: ctx.path,
        userAgent: ctx.get('user-agent') || null,
        requestBytes: () => ctx.request.length ?? received,
      },
    );
    // Health passes the server's status on (503 while it loads); predict's and the camera's failures are the platform's.
    const body = action === 'health' ? answer.body : predictAnswer(answer);
    ctx.status = action === 'health' ? answer.status : 200;
    ctx.type = 'application/json';
    // A streamed answer that breaks off later (the deadline, the cap) is cut short: Koa's pipeline destroys the response.
    ctx.body = body;
  };

  async function workspaceOf(em: EntityManager, deploymentId: string): Promise<string | undefined> {
    const known = workspaces.get(deploymentId);
    if (known) return known;
    const found = await workspaceOfDeployment(em, deploymentId);
    if (found) {
      if (workspaces.size >= MAX_REMEMBERED) workspaces.clear();
      workspaces.set(deploymentId, found);
    }
    return found;
  }
}
