// The datasets table, for what the Dataset entity does not do: the row lock every writer of a dataset's images,
// labels or classes takes first; the counters (and the revision that caches are keyed by) moved in the same
// transaction; the class statistics cached under a revision; the export file of the current state. Every function
// takes the EntityManager first, so it runs inside the caller's transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { datasetFilesSql } from '../storage/blob-keys.ts';

/** What a change of images adds to each counter (negative: takes away). */
export interface CountDelta {
  images: number;
  annotations: number;
  train: number;
  val: number;
  test: number;
  labeled: number;
  errors: number;
}

/** Takes the dataset's row lock until the transaction ends (writers of one dataset go one at a time). */
export async function lockDatasetRow(em: EntityManager, datasetId: string): Promise<void> {
  await query(em, 'select 1 from datasets where id = ? for no key update', [datasetId]);
}

/** Adds the delta to the counters and moves the revision. */
export async function addToCounters(em: EntityManager, datasetId: string, delta: CountDelta): Promise<void> {
  await query(
    em,
    `update datasets set image_count = image_count + ?, annotation_count = annotation_count + ?, train_count = train_count + ?,
       val_count = val_count + ?, test_count = test_count + ?, labeled_count = labeled_count + ?, error_count = error_count + ?,
       revision = revision + 1, updated_at = clock_timestamp()
     where id = ?`,
    [delta.images, delta.annotations, delta.train, delta.val, delta.test, delta.labeled, delta.errors, datasetId],
  );
}

/** Sets every counter from the image rows and moves the revision. */
export async function recountFromImages(em: EntityManager, datasetId: string): Promise<void> {
  await query(
    em,
    `update datasets d set image_count = c.images, annotation_count = c.annotations, train_count = c.train, val_count = c.val,
       test_count = c.test, labeled_count = c.labeled, error_count = c.errors, revision = d.revision + 1, updated_at = clock_timestamp()
     from (select count(*)::int as images, coalesce(sum(label_count), 0)::int as annotations,
             count(*) filter (where split = 'train')::int as train, count(*) filter (where split = 'val')::int as val,
             count(*) filter (where split = 'test')::int as test, count(*) filter (where label_count > 0)::int as labeled,
             count(*) filter (where error is not null)::int as errors
           from images where dataset_id = ?) c
     where d.id = ?`,
    [datasetId, datasetId],
  );
}

/** Whether the dataset exists and is not deleted. */
export async function isDatasetLive(em: EntityManager, datasetId: string): Promise<boolean> {
  const [dataset] = await query(em, 'select 1 from datasets where id = ? and deleted_at is null', [datasetId]);
  return dataset !== undefined;
}

/** Whether the dataset exists, is not deleted and has blurFaces on. */
export async function isBlurFacesOn(em: EntityManager, datasetId: string): Promise<boolean> {
  const [dataset] = await query<{ on: boolean }>(
    em,
    'select blur_faces and deleted_at is null as on from datasets where id = ?',
    [datasetId],
  );
  return dataset?.on ?? false;
}

/** The dataset's revision, image count and classes, and its cached statistics when they are of that revision; undefined when unknown. */
export async function findStatsCache<T>(
  em: EntityManager,
  datasetId: string,
): Promise<{ revision: number; image_count: number; class_names: string[]; cache: T | null } | undefined> {
  const [row] = await query<{ revision: number; image_count: number; class_names: string[]; cache: T | null }>(
    em,
    'select revision, image_count, class_names, case when stats_revision = revision then stats_cache end as cache from datasets where id = ?',
    [datasetId],
  );
  return row;
}

/** Caches the statistics computed at `revision`, unless a write moved the revision meanwhile. */
export async function saveStatsCache(
  em: EntityManager,
  datasetId: string,
  revision: number,
  stats: unknown,
): Promise<void> {
  await query(em, 'update datasets set stats_cache = ?::jsonb, stats_revision = ? where id = ? and revision = ?', [
    JSON.stringify(stats),
    revision,
    datasetId,
    revision,
  ]);
}

/**
 * The export file of the dataset's current state, and whether it can be handed out again: written at the current
 * revision, younger than `freshSql` (a condition on its stored object f) and no older than the dataset's last change.
 */
export async function findCurrentExport(
  em: EntityManager,
  datasetId: string,
  freshSql: string,
): Promise<{ export_key: string | null; fresh: boolean | null }> {
  const [stored] = await query<{ export_key: string | null; fresh: boolean | null }>(
    em,
    `select d.export_key, d.export_revision = d.revision and ${freshSql} and f.updated_at >= d.updated_at as fresh
       from datasets d left join stored_objects f on f.key = d.export_key where d.id = ?`,
    [datasetId],
  );
  return stored;
}

/** Records the export file written of the dataset at `revision`. */
export async function setCurrentExport(
  em: EntityManager,
  datasetId: string,
  key: string,
  revision: number,
): Promise<void> {
  await query(em, 'update datasets set export_key = ?, export_revision = ? where id = ?', [key, revision, datasetId]);
}

/** A job queued or running on the dataset `d` (an ingest) still writes into it: it is not deleted under the job. */
export const ACTIVE_JOB = `exists (select 1 from jobs j where j.subject_id = d.id and j.status in ('queued', 'running'))`;

/** Takes the workspace's dataset out of trash; false when it is not there. */
export async function restoreDataset(em: EntityManager, datasetId: string, workspaceId: string): Promise<boolean> {
  const restored = await query(
    em,
    `update datasets set deleted_at = null, updated_at = now()
         where id = ? and workspace_id = ? and deleted_at is not null returning id`,
    [datasetId, workspaceId],
  );
  return restored.length > 0;
}

/** The slug of one of the workspace's datasets in trash that a job (an ingest) is still working on, if any. */
export async function busyTrashedDatasetSlug(em: EntityManager, workspaceId: string): Promise<string | undefined> {
  const [busy] = await query<{ slug: string }>(
    em,
    `select d.slug from datasets d where d.workspace_id = ? and d.deleted_at is not null and ${ACTIVE_JOB} limit 1`,
    [workspaceId],
  );
  return busy?.slug;
}

/** Which trashed items a bulk erase takes: one workspace's, those deleted before a time, or both. */
export interface TrashScope {
  workspaceId?: string;
  deletedBefore?: Date;
}

/** Locks the workspace's dataset in trash (waiting for another lock on it); whether a job is working on it, undefined when it is not in trash. */
export async function lockTrashedDataset(
  em: EntityManager,
  datasetId: string,
  workspaceId: string,
): Promise<{ busy: boolean } | undefined> {
  const [row] = await query<{ busy: boolean }>(
    em,
    `select ${ACTIVE_JOB} as busy from datasets d
       where d.id = ? and d.workspace_id = ? and d.deleted_at is not null for update of d`,
    [datasetId, workspaceId],
  );
  return row;
}

/** Claims the first dataset in trash in scope that no job is working on and no other transaction has locked (oldest deletion first). */
export async function claimTrashedDataset(em: EntityManager, scope: TrashScope): Promise<string | undefined> {
  const conditions = [
    scope.workspaceId ? 'and d.workspace_id = ?' : '',
    scope.deletedBefore ? 'and d.deleted_at < ?' : '',
  ].join(' ');
  const params = [scope.workspaceId, scope.deletedBefore].filter((value) => value !== undefined);
  const [claimed] = await query<{ id: string }>(
    em,
    `select d.id from datasets d where d.deleted_at is not null and not ${ACTIVE_JOB} ${conditions} order by d.deleted_at, d.id limit 1 for update skip locked`,
    params,
  );
  return claimed?.id;
}

/** The image files (hash, ext) of the dataset and of its versions (a read over images and dataset_version_images). */
export async function imageFilesOfDatasetAndVersions(
  em: EntityManager,
  datasetId: string,
): Promise<Array<{ hash: string; ext: string }>> {
  return query<{ hash: string; ext: string }>(
    em,
    `select hash, ext from images where dataset_id = ?
     union select vi.hash, vi.ext from dataset_version_images vi join dataset_versions v on v.id = vi.version_id where v.dataset_id = ?`,
    [datasetId, datasetId],
  );
}

/** The dataset's own files, as storage/blob-keys.ts lists the columns that hold them. */
const DATASET_FILES = datasetFilesSql();

/** The keys of the dataset's own files (exports, archives...), from every column that holds one. */
export async function datasetFiles(em: EntityManager, datasetId: string): Promise<Array<{ key: string }>> {
  return query<{ key: string }>(em, DATASET_FILES.sql, Array<string>(DATASET_FILES.params).fill(datasetId));
}

/** Deletes the dataset (its images, labels, versions and stars cascade); returns its workspace. */
export async function deleteDataset(em: EntityManager, datasetId: string): Promise<string> {
  const [{ workspace_id }] = await query<{ workspace_id: string }>(
    em,
    'delete from datasets where id = ? returning workspace_id',
    [datasetId],
  );
  return workspace_id;
}
