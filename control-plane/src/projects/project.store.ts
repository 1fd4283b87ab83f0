// The projects table: every hand-written statement that reads or writes it outside the ORM entity (project.entity.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/**
 * Puts the project in trash, unless it already is (false then). Its row lock waits for models being put in it
 * (holdProject) to be committed.
 */
export async function trashProject(em: EntityManager, projectId: string, deletedAt: Date): Promise<boolean> {
  const [trashed] = await query(em, 'update projects set deleted_at = ?, updated_at = ? where id = ? and deleted_at is null returning id', [deletedAt, deletedAt, projectId]);
  return trashed !== undefined;
}

/** Takes the workspace's project out of trash; false when it is not there. */
export async function restoreProject(em: EntityManager, projectId: string, workspaceId: string): Promise<boolean> {
  const restored = await query(
    em,
    `update projects set deleted_at = null, updated_at = now()
         where id = ? and workspace_id = ? and deleted_at is not null returning id`,
    [projectId, workspaceId],
  );
  return restored.length > 0;
}
