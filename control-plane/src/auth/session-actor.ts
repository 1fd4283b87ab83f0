import type { EntityManager } from '@mikro-orm/postgresql';
import { Forbidden, Unauthorized } from '../http/errors.ts';
import type { KeyActor } from './actor.ts';
import { liveSessionByHash, type SessionRow } from './session.store.ts';
import { csrfMatches, hashSessionToken } from './session-token.ts';

/** A session's actor is a KeyActor (same roles, same workspace, same profile as the user's key there) with this prefix. */
export const SESSION_KEY_PREFIX = 'session';

export function isSessionActor(actor: KeyActor): boolean {
  return actor.keyPrefix === SESSION_KEY_PREFIX;
}

export function sessionActor(row: SessionRow & { role: NonNullable<SessionRow['role']> }): KeyActor {
  return {
    kind: 'key',
    // The rate limits' subject (key:<keyId>): one budget for all of a user's sessions, which they can open at will.
    keyId: `session:${row.user_id}`,
    keyPrefix: SESSION_KEY_PREFIX,
    workspaceId: row.workspace_id,
    workspaceHandle: row.handle,
    workspaceKind: row.kind,
    userId: row.user_id,
    username: row.username,
    role: row.role,
    jobScope: null,
    deploymentId: null,
    profile: {
      workspaceName: row.workspace_name,
      region: row.region,
      workspaceCreatedAt: new Date(row.workspace_created_at).toISOString(),
      userName: row.user_name,
      teams: row.teams,
    },
  };
}

/** The live session of this cookie value, as it acts; undefined when it is none (expired, signed out, membership gone). */
export async function lookupSession(
  em: EntityManager,
  token: string,
): Promise<{ row: SessionRow; actor: KeyActor } | undefined> {
  const hash = hashSessionToken(token);
  const row = hash === undefined ? undefined : await liveSessionByHash(em, hash);
  if (!row || !row.role) return undefined;
  return { row, actor: sessionActor({ ...row, role: row.role }) };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The router's authentication by session cookie (when no Authorization header is sent). No live session: 401 where a
 * key is required, anonymous where it is optional (a stale cookie does not hide public pages). A request that can
 * change something must carry the session's CSRF token in X-CSRF-Token, else 403.
 */
export async function authenticateSession(
  em: EntityManager,
  token: string,
  request: { method: string; csrfHeader: string | undefined; required: boolean },
): Promise<KeyActor | undefined> {
  const session = await lookupSession(em, token);
  if (!session) {
    if (request.required) throw Unauthorized('Session expired or signed out: sign in again');
    return undefined;
  }
  if (!SAFE_METHODS.has(request.method) && !csrfMatches(token, request.csrfHeader))
    throw Forbidden('Missing or wrong X-CSRF-Token header (the csrfToken of GET /api/auth/session)');
  return session.actor;
}
