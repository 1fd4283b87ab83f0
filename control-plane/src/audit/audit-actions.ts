// What the audit log records of a request, and in which words: the changes (every POST, PUT, PATCH and DELETE the
// API routes, less a short list of requests that change nothing), named actions for sign-ins and for what changes
// who may do what, and the resource a change is about. Pure: the middleware (audit-trail.ts) and the API's
// description (audit.routes.ts) read these tables, so the documentation cannot drift from what is recorded.
import type { Actor } from '../auth/actor.ts';
import type { AuditNote } from '../http/app-context.ts';
import type { AuditRecord } from './audit.store.ts';

/** The methods whose requests change something (GET and HEAD never do; the OIDC callback is a named exception). */
const CHANGES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Requests recorded under a name of their own (`auth.login`) instead of `METHOD /route/template`. A sign-in that
 * fails is `auth.login_failed`.
 */
export const NAMED_ACTIONS: Readonly<Record<string, string>> = {
  'POST /api/auth/login': 'auth.login',
  'GET /api/auth/oidc/callback': 'auth.login',
  'POST /api/auth/logout': 'auth.logout',
  'PUT /api/auth/password': 'auth.password',
  'POST /api/api-keys': 'keys.create',
  'DELETE /api/api-keys/:keyId': 'keys.revoke',
  'PUT /api/workspaces/:owner/members/:username': 'members.set_role',
  'DELETE /api/workspaces/:owner/members/:username': 'members.remove',
  'POST /api/hosts': 'hosts.connect',
  'POST /api/hosts/enroll': 'hosts.enroll',
  'POST /api/hosts/:name/rotate': 'hosts.rotate',
  'DELETE /api/hosts/:name': 'hosts.disconnect',
  'DELETE /api/trash': 'trash.erase',
};

export const LOGIN_FAILED = 'auth.login_failed';

/**
 * Recorded although nobody known made them: a sign-in (failed ones of unknown users included) and a host's enrollment
 * (its one-time token is the credential). Every other request is recorded only when a key, a session or the route's
 * handler names who made it, so requests nobody could be held to (no key, an invalid key: the access log has them)
 * cannot fill the table.
 */
const ANONYMOUS_RECORDED = new Set(['auth.login', 'hosts.enroll']);

/** Named actions written before the request is answered (the others within a second, and all of them on shutdown). */
export const WRITTEN_AT_ONCE = new Set([...Object.values(NAMED_ACTIONS), LOGIN_FAILED]);

/** The changing requests that are not recorded, with why: they change nothing, or are a job's or a host's traffic. */
export const UNRECORDED: Readonly<Record<string, string>> = {
  'POST /api/datasets/:owner/:dataset/images': 'reads images by their IDs',
  'POST /api/images/urls': "reads images' signed URLs",
  'POST /api/images/:imageId/predict': 'a prediction, nothing saved',
  'POST /api/models/:owner/:project/:model/predict': 'a prediction',
  'POST /api/deployments/:owner/:deployment/predict': "a prediction (the deployment's request log keeps it)",
  'POST /api/integrations/buckets/discover': 'lists the buckets of credentials, saving nothing',
  'POST /api/integrations/roboflow/preview': 'reads a Roboflow project, saving nothing',
  'POST /api/mobile/models/:exportId': "reads a model's descriptor through a mobile link",
  'POST /api/upload/signed-url': 'opens an upload (POST /api/upload/complete, which makes the change, is recorded)',
  'PUT /api/upload/sessions/:sessionId/file': "an upload's data, sent to its signed URL",
  'POST /api/webhooks/training/metrics': "a training's epoch and console reports (the run keeps them)",
  'PUT /api/workers/jobs/:jobId/checkpoint': "a worker host's checkpoint of a running job",
  'PUT /api/workers/jobs/:jobId/outputs/:name': "a worker host's job output (the job's own record)",
};

/** Column widths (the migration's); longer values are cut, so a batch never fails on one entry. */
const WIDTHS = { actorName: 64, via: 16, clientAddress: 64, action: 128, resource: 512, requestId: 64 } as const;
const cut = (value: string | null, width: number) => (value === null ? null : value.slice(0, width));

/**
 * The resource a route's request is about: its path without `/api/`, up to its last parameter, the parameters filled
 * in (URI-encoded): `PATCH /api/datasets/:owner/:dataset` and `POST /api/datasets/:owner/:dataset/classes/merge` are
 * both about `datasets/alice/shapes`. A route without parameters is about its whole path (`datasets`, `training/start`).
 * Never the query string or the body.
 */
export function resourceOf(route: string, params: Record<string, string> | undefined): string {
  const segments = route.replace(/^\/api\//, '').split('/');
  const last = segments.findLastIndex((segment) => segment.startsWith(':'));
  return segments
    .slice(0, last < 0 ? segments.length : last + 1)
    .map((segment) => (segment.startsWith(':') ? encodeURIComponent(params?.[segment.slice(1)] ?? segment) : segment))
    .join('/');
}

/** One answered request as the audit sees it. */
export interface AuditedRequest {
  /** When it arrived (epoch milliseconds). */
  at: number;
  method: string;
  /** The template of the route that answered it (`/api/datasets/:owner/:dataset`). */
  route: string;
  params: Record<string, string> | undefined;
  /** The status it was answered with (errors included). */
  status: number;
  actor: Actor | undefined;
  note: AuditNote | undefined;
  clientAddress: string;
  requestId: string;
}

/** The entry a request leaves, or undefined when it is not recorded (see NAMED_ACTIONS, UNRECORDED). */
export function auditEntryOf(request: AuditedRequest): AuditRecord | undefined {
  const template = `${request.method} ${request.route}`;
  const named = NAMED_ACTIONS[template];
  if (!named && (!CHANGES.has(request.method) || template in UNRECORDED)) return undefined;
  const { actor, note } = request;
  const who =
    note?.actor ??
    (actor?.kind === 'key'
      ? { userId: actor.userId, username: actor.username, workspaceId: actor.workspaceId, via: actor.keyPrefix }
      : undefined);
  const workspaceId = note?.workspaceId !== undefined ? note.workspaceId : (who?.workspaceId ?? null);
  if (!who && workspaceId === null && !(named && ANONYMOUS_RECORDED.has(named))) return undefined;
  const action = named === 'auth.login' && request.status >= 400 ? LOGIN_FAILED : (named ?? template);
  return {
    at: new Date(request.at),
    workspaceId,
    actorId: who?.userId ?? null,
    actorName: cut(who?.username ?? null, WIDTHS.actorName),
    via: cut(who?.via ?? null, WIDTHS.via),
    clientAddress: cut(request.clientAddress, WIDTHS.clientAddress),
    action: cut(action, WIDTHS.action)!,
    resource: cut(note?.resource ?? resourceOf(request.route, request.params), WIDTHS.resource)!,
    outcome: request.status,
    requestId: cut(request.requestId, WIDTHS.requestId),
  };
}
