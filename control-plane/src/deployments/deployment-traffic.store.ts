// The service URL's read of the deployments table: whose a deployment is.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** The workspace a deployment belongs to (never changes), for checking a service URL's key. */
export async function workspaceOfDeployment(em: EntityManager, id: string): Promise<string | undefined> {
  const [row] = await query<{ workspace_id: string }>(em, 'select workspace_id from deployments where id = ?', [id]);
  return row?.workspace_id;
}
