// The projects table: every hand-written statement that reads or writes it outside the ORM entity (project.entity.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/**
 * Puts the project in trash, unless it already is (false then). Its row lock waits for models being put in it
 * (holdProject) to be committed.
 */
export async function trashProject(em: EntityManager, projectId: string, deletedAt: Date): Promise<boolean> {
  const [trashed] = await query(
    em,
    'update projects set deleted_at = ?, updated_at = ? where id = ? and deleted_at is null returning id',
    [deletedAt, deletedAt, projectId],
  );
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

/** Locks the workspace's project in trash (waiting for another lock on it); false when it is not in trash. */
export async function lockTrashedProject(em: EntityManager, projectId: string, workspaceId: string): Promise<boolean> {
  const [row] = await query<{ busy: boolean }>(
    em,
    `select false as busy from projects x
       where x.id = ? and x.workspace_id = ? and x.deleted_at is not null for update of x`,
    [projectId, workspaceId],
  );
  return row !== undefined;
}

/** Claims the first project in trash in scope that no other transaction has locked (oldest deletion first). */
export async function claimTrashedProject(
  em: EntityManager,
  scope: { workspaceId?: string; deletedBefore?: Date },
): Promise<string | undefined> {
  const conditions = [
    scope.workspaceId ? 'and p.workspace_id = ?' : '',
    scope.deletedBefore ? 'and p.deleted_at < ?' : '',
  ].join(' ');
  const params = [scope.workspaceId, scope.deletedBefore].filter((value) => value !== undefined);
  const [claimed] = await query<{ id: string }>(
    em,
    `select p.id from projects p where p.deleted_at is not null ${conditions} order by p.deleted_at, p.id limit 1 for update skip locked`,
    params,
  );
  return claimed?.id;
}

/** Deletes the project (its models cascade); returns its workspace. */
export async function deleteProject(em: EntityManager, projectId: string): Promise<string> {
  const [{ workspace_id }] = await query<{ workspace_id: string }>(
    em,
    `delete from projects where id = ? returning workspace_id`,
    [projectId],
  );
  return workspace_id;
}
