// The traffic side's reads of the deployments table: what a request needs to reach a deployment, and nothing more.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

export interface TrafficTarget {
  id: string;
  workspaceId: string;
  region: string;
  status: string;
  statusMessage: string | null;
  /** Its model's project is public: anyone may predict with it and see it. */
  modelPublic: boolean;
}

export async function findTrafficTarget(em: EntityManager, owner: string, slug: string): Promise<TrafficTarget | undefined> {
  const [row] = await query<TrafficTarget>(
    em,
    `select d.id, d.workspace_id as "workspaceId", d.region, d.status, d.status_message as "statusMessage", p.visibility = 'public' as "modelPublic"
     from deployments d join workspaces w on w.id = d.workspace_id join models m on m.id = d.model_id join projects p on p.id = m.project_id
     where w.handle = ? and d.slug = ?`,
    [owner, slug],
  );
  return row;
}

/** The workspace a deployment belongs to (never changes), for checking a service URL's key. */
export async function workspaceOfDeployment(em: EntityManager, id: string): Promise<string | undefined> {
  const [row] = await query<{ workspace_id: string }>(em, 'select workspace_id from deployments where id = ?', [id]);
  return row?.workspace_id;
}
