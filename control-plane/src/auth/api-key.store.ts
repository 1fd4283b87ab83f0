// The api_keys table: a key's lookup by its hash (the authenticator's, with what the key acts as) and its last use; the
// keys a training job reports with are deleted with their job (revokeJobKeys in training/job-keys.ts). Keys are
// created, listed and revoked through the ORM (ApiKey, auth/api-key.service.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Region } from '@vp/config';
import type { Role } from '../account/roles.ts';
import { query } from '../db/sql.ts';
import type { KeyActor } from './actor.ts';
import type { JobScope } from './api-key.entity.ts';

const LOOKUP_SQL = `
  select k.id, k.prefix, k.workspace_id, w.handle, w.kind, k.user_id, u.username,
         case when w.owner_id = k.user_id then 'owner' else m.role end as role,
         k.job_scope, k.deployment_id, w.name as workspace_name, w.region, w.created_at as workspace_created_at, u.name as user_name,
         coalesce((select json_agg(json_build_object('id', t.id, 'handle', t.handle, 'name', t.name, 'region', t.region, 'role', tm.role) order by t.handle)
           from memberships tm join workspaces t on t.id = tm.workspace_id
           where tm.user_id = k.user_id and t.kind = 'team'), '[]') as teams
  from api_keys k
  join workspaces w on w.id = k.workspace_id
  join users u on u.id = k.user_id
  left join memberships m on m.workspace_id = k.workspace_id and m.user_id = k.user_id
  where k.key_hash = ? and (k.expires_at is null or k.expires_at > now())
    and (k.job_scope is null or exists (select 1 from jobs j where j.id = k.job_scope->>'jobId' and j.status = 'running'))`;

/** A live key (not expired; a job's key only while its job runs), with its workspace, user and their role. */
export interface LookupRow {
  id: string;
  prefix: string;
  workspace_id: string;
  handle: string;
  kind: 'personal' | 'team';
  user_id: string;
  username: string;
  role: Role | null;
  job_scope: JobScope | null;
  deployment_id: string | null;
  workspace_name: string;
  region: Region;
  workspace_created_at: Date;
  user_name: string;
  teams: KeyActor['profile']['teams'];
}

/**
 * The live key with this hash, as it acts; undefined for none. Read on the manager's own connection, outside any
 * transaction of the caller.
 */
export async function liveKeyByHash(em: EntityManager, hash: string): Promise<LookupRow | undefined> {
  const rows = await em.getConnection().execute<LookupRow[]>(LOOKUP_SQL, [hash]);
  return rows[0];
}

/** Records the key's last use, on the manager's own connection (off the request's transaction). */
export function recordKeyUse(em: EntityManager, keyId: string, at: Date): Promise<unknown> {
  return em.getConnection().execute('update api_keys set last_used_at = ? where id = ?', [at, keyId]);
}

/** Deletes the keys of a training job (its attempts'); answers their ids. */
export function deleteJobKeys(em: EntityManager, jobId: string): Promise<Array<{ id: string }>> {
  return query<{ id: string }>(em, `delete from api_keys where job_scope->>'jobId' = ? returning id`, [jobId]);
}
