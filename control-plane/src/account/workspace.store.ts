// The workspaces table's hand-written SQL (workspaces are created and changed through the ORM's Workspace entity in
// account.service.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** The id of the workspace with this handle, if there is one. */
export async function workspaceIdByHandle(em: EntityManager, handle: string): Promise<string | undefined> {
  const [workspace] = await query<{ id: string }>(em, 'select id from workspaces where handle = ?', [handle]);
  return workspace?.id;
}
