// The models table: every hand-written statement that reads or writes it outside the ORM entity (model.entity.ts).
// A model's status changes only through model-lifecycle.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** What predict's hot path needs of a model and the project it is guarded by (see findModelRef). */
export interface ModelRefRow {
  id: string;
  file_key: string | null;
  train_args: Record<string, unknown> | null;
  project_id: string;
  workspace_id: string;
  visibility: 'public' | 'private';
}

/** The model at owner/project/slug with its project's access columns; neither it nor its project in trash. */
export async function modelRefByPath(
  em: EntityManager,
  owner: string,
  project: string,
  slug: string,
): Promise<ModelRefRow | undefined> {
  const [row] = await query<ModelRefRow>(
    em,
    `select m.id, m.file_key, m.train_args, p.id as project_id, p.workspace_id, p.visibility
       from models m join projects p on p.id = m.project_id join workspaces w on w.id = m.workspace_id
      where w.handle = ? and p.slug = ? and p.deleted_at is null and m.slug = ? and m.deleted_at is null`,
    [owner, project, slug],
  );
  return row;
}

/** The model's full name, `workspace/project/model` (its handle and slugs), if it exists (in trash or not). */
export async function modelFullName(em: EntityManager, modelId: string): Promise<string | undefined> {
  const [model] = await query<{ name: string }>(
    em,
    `select w.handle || '/' || p.slug || '/' || m.slug as name from models m join projects p on p.id = m.project_id join workspaces w on w.id = m.workspace_id where m.id = ?`,
    [modelId],
  );
  return model?.name;
}

/** Whether the model exists and is not in trash (its project may be). */
export async function isModelLive(em: EntityManager, modelId: string): Promise<boolean> {
  const [model] = await query<{ live: boolean }>(em, 'select deleted_at is null as live from models where id = ?', [
    modelId,
  ]);
  return model?.live ?? false;
}

/** A model's name and task, and whether neither it nor its project is in trash (a mobile link resolves only then). */
export async function mobileModelOf(
  em: EntityManager,
  modelId: string,
): Promise<{ name: string; task: string; live: boolean } | undefined> {
  const [model] = await query<{ name: string; task: string; live: boolean }>(
    em,
    `select m.name, m.task, m.deleted_at is null and p.deleted_at is null as live from models m join projects p on p.id = m.project_id where m.id = ?`,
    [modelId],
  );
  return model;
}

/** The SHA-256 kept on the model for the weights file `weightsKey`, if it was computed for that file. */
export async function cachedWeightsSha256(
  em: EntityManager,
  modelId: string,
  weightsKey: string,
): Promise<string | null | undefined> {
  const [cached] = await query<{ sha: string | null }>(
    em,
    'select weights_sha256 as sha from models where id = ? and weights_sha256_key = ?',
    [modelId, weightsKey],
  );
  return cached?.sha;
}

/** Keeps the SHA-256 of the weights file `weightsKey` on every model sharing it (clones share weights). */
export async function recordWeightsSha256(em: EntityManager, weightsKey: string, sha: string): Promise<void> {
  await query(em, 'update models set weights_sha256 = ?, weights_sha256_key = ? where file_key = ?', [
    sha,
    weightsKey,
    weightsKey,
  ]);
}

/** What the model at owner/project/slug was trained from (its training's `model` argument), and its name; trash included. */
export async function trainedFrom(
  em: EntityManager,
  owner: string,
  project: string,
  slug: string,
): Promise<{ model: string | null; name: string } | undefined> {
  const [parent] = await query<{ model: string | null; name: string }>(
    em,
    `select m.train_args->>'model' as model, m.name from models m join projects p on p.id = m.project_id join workspaces w on w.id = m.workspace_id
       where w.handle = ? and p.slug = ? and m.slug = ?`,
    [owner, project, slug],
  );
  return parent;
}

/** The ids of the project's models not in trash whose lowercased name or metadata is `like` the pattern. */
export async function searchProjectModels(em: EntityManager, projectId: string, pattern: string): Promise<string[]> {
  const matching = await query<{ id: string }>(
    em,
    'select id from models where project_id = ? and deleted_at is null and (lower(name) like ? or lower(metadata::text) like ?)',
    [projectId, pattern, pattern],
  );
  return matching.map((row) => row.id);
}

/** The project's models not in trash go to trash with it (restoring the project brings them back); returns them. */
export async function trashModelsWithProject(
  em: EntityManager,
  projectId: string,
  deletedAt: Date,
): Promise<Array<{ id: string; model: string }>> {
  return query<{ id: string; model: string }>(
    em,
    'update models set deleted_at = ?, trashed_with_project = true, updated_at = ? where project_id = ? and deleted_at is null returning id, slug as model',
    [deletedAt, deletedAt, projectId],
  );
}

/** Models not in trash, per project (projects without any are absent). */
export async function liveModelCounts(em: EntityManager, projectIds: string[]): Promise<Map<string, number>> {
  const rows = await query<{ project_id: string; count: string }>(
    em,
    'select project_id, count(*) from models where project_id = any(?::text[]) and deleted_at is null group by project_id',
    [pgArray(projectIds)],
  );
  return new Map(rows.map((row) => [row.project_id, Number(row.count)]));
}

/** The slug of the project in trash that the workspace's model in trash belongs to, if its project is in trash. */
export async function trashedProjectSlugOfModel(
  em: EntityManager,
  modelId: string,
  workspaceId: string,
): Promise<string | undefined> {
  const [project] = await query<{ slug: string }>(
    em,
    'select p.slug from models m join projects p on p.id = m.project_id where m.id = ? and m.workspace_id = ? and m.deleted_at is not null and p.deleted_at is not null',
    [modelId, workspaceId],
  );
  return project?.slug;
}

/** Takes the workspace's model out of trash (no longer trashed with its project); false when it is not there. */
export async function restoreModel(em: EntityManager, modelId: string, workspaceId: string): Promise<boolean> {
  const restored = await query(
    em,
    `update models set deleted_at = null, updated_at = now(), trashed_with_project = false
         where id = ? and workspace_id = ? and deleted_at is not null returning id`,
    [modelId, workspaceId],
  );
  return restored.length > 0;
}

/** Brings back the models that went to trash with the project; returns how many. */
export async function restoreModelsTrashedWithProject(em: EntityManager, projectId: string): Promise<number> {
  const models = await query(
    em,
    `update models set deleted_at = null, trashed_with_project = false, updated_at = now()
         where project_id = ? and trashed_with_project and deleted_at is not null returning id`,
    [projectId],
  );
  return models.length;
}

/** The models of a project (or the one model) that a restore or erase of a trash item touches, by slug. */
export async function modelsOfTrashItem(
  em: EntityManager,
  type: 'project' | 'model',
  id: string,
): Promise<Array<{ id: string; slug: string; name: string; trashed_with_project: boolean }>> {
  return query<{ id: string; slug: string; name: string; trashed_with_project: boolean }>(
    em,
    `select id, slug, name, trashed_with_project from models where ${type === 'project' ? 'project_id' : 'id'} = ? order by slug`,
    [id],
  );
}

/** Locks the workspace's model in trash (waiting for another lock on it); false when it is not in trash. */
export async function lockTrashedModel(em: EntityManager, modelId: string, workspaceId: string): Promise<boolean> {
  const [row] = await query<{ busy: boolean }>(
    em,
    `select false as busy from models x
       where x.id = ? and x.workspace_id = ? and x.deleted_at is not null for update of x`,
    [modelId, workspaceId],
  );
  return row !== undefined;
}

/**
 * Claims the first model in trash in scope, trashed on its own (not with its project), that no other transaction
 * has locked (oldest deletion first).
 */
export async function claimTrashedModel(
  em: EntityManager,
  scope: { workspaceId?: string; deletedBefore?: Date },
): Promise<string | undefined> {
  const conditions = [
    scope.workspaceId ? 'and m.workspace_id = ?' : '',
    scope.deletedBefore ? 'and m.deleted_at < ?' : '',
  ].join(' ');
  const params = [scope.workspaceId, scope.deletedBefore].filter((value) => value !== undefined);
  const [claimed] = await query<{ id: string }>(
    em,
    `select m.id from models m where m.deleted_at is not null and not m.trashed_with_project ${conditions} order by m.deleted_at, m.id limit 1 for update skip locked`,
    params,
  );
  return claimed?.id;
}

/** The project's models, locked in id order (type project), or the one model (unlocked: its row is), with their weights. */
export async function modelFilesToErase(
  em: EntityManager,
  type: 'project' | 'model',
  id: string,
): Promise<Array<{ id: string; file_key: string | null }>> {
  return query<{ id: string; file_key: string | null }>(
    em,
    type === 'project'
      ? 'select id, file_key from models where project_id = ? order by id for update'
      : 'select id, file_key from models where id = ?',
    [id],
  );
}

/** Deletes the model; returns its workspace. */
export async function deleteModel(em: EntityManager, modelId: string): Promise<string> {
  const [{ workspace_id }] = await query<{ workspace_id: string }>(
    em,
    `delete from models where id = ? returning workspace_id`,
    [modelId],
  );
  return workspace_id;
}

/** Takes a transaction lock per weights key (in the order given), so two erasers of clones sharing weights go one at a time. */
export async function lockWeightKeys(em: EntityManager, keys: string[]): Promise<void> {
  await query(em, 'select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(?::text[]) k', [pgArray(keys)]);
}

/** The keys no model's file_key refers to. */
export async function keysNoModelUses(em: EntityManager, keys: string[]): Promise<string[]> {
  const unused = await query<{ key: string }>(
    em,
    'select k as key from unnest(?::text[]) k where not exists (select 1 from models where file_key = k)',
    [pgArray(keys)],
  );
  return unused.map((row) => row.key);
}
