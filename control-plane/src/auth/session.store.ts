// The console's sign-in tables: user_passwords (scrypt hashes), auth_sessions (only the SHA-256 of each cookie value)
// and auth_oidc_attempts (an OIDC sign-in between the redirect to the provider and its callback).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { Role } from '../account/roles.ts';
import { query } from '../db/sql.ts';
import type { KeyActor } from './actor.ts';

/** A live session with what it acts as: the same facts, and the same role rule, as a key's lookup (api-key.store.ts). */
const LOOKUP_SQL = `
  select s.id, s.expires_at, s.workspace_id, w.handle, w.kind, s.user_id, u.username,
         case when w.owner_id = s.user_id then 'owner' else m.role end as role,
         w.name as workspace_name, w.region, w.created_at as workspace_created_at, u.name as user_name,
         coalesce((select json_agg(json_build_object('id', t.id, 'handle', t.handle, 'name', t.name, 'region', t.region, 'role', tm.role) order by t.handle)
           from memberships tm join workspaces t on t.id = tm.workspace_id
           where tm.user_id = s.user_id and t.kind = 'team'), '[]') as teams
  from auth_sessions s
  join workspaces w on w.id = s.workspace_id
  join users u on u.id = s.user_id
  left join memberships m on m.workspace_id = s.workspace_id and m.user_id = s.user_id
  where s.token_hash = ? and s.expires_at > now()`;

export interface SessionRow {
  id: string;
  expires_at: Date;
  workspace_id: string;
  handle: string;
  kind: 'personal' | 'team';
  user_id: string;
  username: string;
  /** Null when the user is no longer a member of the session's workspace: the session then works no more. */
  role: Role | null;
  workspace_name: string;
  region: Region;
  workspace_created_at: Date;
  user_name: string;
  teams: KeyActor['profile']['teams'];
}

/** The live (unexpired) session with this token hash; on the manager's own connection, outside any transaction. */
export async function liveSessionByHash(em: EntityManager, tokenHash: string): Promise<SessionRow | undefined> {
  const rows = await em.getConnection().execute<SessionRow[]>(LOOKUP_SQL, [tokenHash]);
  return rows[0];
}

export async function insertSession(
  em: EntityManager,
  session: {
    id: string;
    tokenHash: string;
    userId: string;
    workspaceId: string;
    method: 'password' | 'oidc';
    hours: number;
  },
): Promise<void> {
  await query(
    em,
    `insert into auth_sessions (id, token_hash, user_id, workspace_id, method, expires_at)
     values (?, ?, ?, ?, ?, now() + make_interval(hours => ?))`,
    [session.id, session.tokenHash, session.userId, session.workspaceId, session.method, session.hours],
  );
}

export async function deleteSessionByHash(em: EntityManager, tokenHash: string): Promise<void> {
  await query(em, 'delete from auth_sessions where token_hash = ?', [tokenHash]);
}

/** Ends a user's sessions (a new password), but the one with `keepHash` (the session that changed it). */
export async function deleteUserSessions(em: EntityManager, userId: string, keepHash?: string): Promise<void> {
  await query(em, 'delete from auth_sessions where user_id = ? and token_hash <> ?', [userId, keepHash ?? '']);
}

/** Drops expired sessions and OIDC attempts (run now and then by sign-ins). */
export async function deleteExpired(em: EntityManager): Promise<void> {
  await query(em, 'delete from auth_sessions where expires_at <= now()');
  await query(em, 'delete from auth_oidc_attempts where expires_at <= now()');
}

/** The user's scrypt hash; undefined when they have no password. */
export async function passwordHashOf(em: EntityManager, userId: string): Promise<string | undefined> {
  const rows = await query<{ hash: string }>(em, 'select hash from user_passwords where user_id = ?', [userId]);
  return rows[0]?.hash;
}

export async function savePasswordHash(em: EntityManager, userId: string, hash: string): Promise<void> {
  await query(
    em,
    `insert into user_passwords (user_id, hash, updated_at) values (?, ?, now())
     on conflict (user_id) do update set hash = excluded.hash, updated_at = excluded.updated_at`,
    [userId, hash],
  );
}

export interface UserRow {
  id: string;
  username: string;
  /** Their personal workspace (where a failed sign-in of theirs is audited); null when they have none. */
  home_workspace_id: string | null;
}

export async function userByUsername(em: EntityManager, username: string): Promise<UserRow | undefined> {
  const rows = await query<UserRow>(
    em,
    `select u.id, u.username,
       (select w.id from workspaces w where w.kind = 'personal' and w.owner_id = u.id order by w.created_at limit 1) as home_workspace_id
     from users u where u.username = ?`,
    [username],
  );
  return rows[0];
}

/**
 * The workspace a session of this user acts in: the team `handle` when they own it or are a member, else (no handle)
 * their personal workspace; undefined when there is none such.
 */
export async function sessionWorkspace(
  em: EntityManager,
  userId: string,
  handle: string | undefined,
): Promise<{ id: string; handle: string } | undefined> {
  const rows =
    handle === undefined
      ? await query<{ id: string; handle: string }>(
          em,
          `select id, handle from workspaces where kind = 'personal' and owner_id = ? order by created_at limit 1`,
          [userId],
        )
      : await query<{ id: string; handle: string }>(
          em,
          `select w.id, w.handle from workspaces w
           where w.handle = ? and (w.owner_id = ? or exists (select 1 from memberships m where m.workspace_id = w.id and m.user_id = ?))`,
          [handle, userId, userId],
        );
  return rows[0];
}

export interface OidcAttempt {
  state: string;
  codeVerifier: string;
  nonce: string;
  returnTo: string;
}

export async function insertOidcAttempt(em: EntityManager, attempt: OidcAttempt, minutes: number): Promise<void> {
  await query(
    em,
    `insert into auth_oidc_attempts (state, code_verifier, nonce, return_to, expires_at)
     values (?, ?, ?, ?, now() + make_interval(mins => ?))`,
    [attempt.state, attempt.codeVerifier, attempt.nonce, attempt.returnTo, minutes],
  );
}

/** The unexpired attempt with this state, deleted as it is read: a callback is answered once. */
export async function takeOidcAttempt(em: EntityManager, state: string): Promise<OidcAttempt | undefined> {
  const rows = await query<OidcAttempt>(
    em,
    `delete from auth_oidc_attempts where state = ? and expires_at > now()
     returning state, code_verifier as "codeVerifier", nonce, return_to as "returnTo"`,
    [state],
  );
  return rows[0];
}
