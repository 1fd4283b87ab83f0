import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { Conflict, NotFound } from '../http/errors.ts';
import { exportFilesOf, unusedFiles } from '../exports/export.store.ts';
import { ACTIVE_JOB } from '../datasets/dataset.store.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { datasetFilesSql } from '../storage/blob-keys.ts';
import type { Storage } from '../storage/storage.ts';

export const TRASH_TYPES = ['project', 'dataset', 'model'] as const;
export type TrashType = (typeof TRASH_TYPES)[number];

export const TRASH_TABLES = { project: 'projects', dataset: 'datasets', model: 'models' } as const satisfies Record<TrashType, string>;

export { ACTIVE_JOB };

/**
 * What bulk erasing picks, in this order: models trashed on their own (so they count as deleted items,
 * not as models cascaded with a project), then projects with all their models, then datasets no job is
 * working on. Models trashed with their project go with the project.
 */
const CLAIMS: Array<{ type: TrashType; alias: string; sql: string }> = [
  { type: 'model', alias: 'm', sql: 'select m.id from models m where m.deleted_at is not null and not m.trashed_with_project' },
  { type: 'project', alias: 'p', sql: 'select p.id from projects p where p.deleted_at is not null' },
  { type: 'dataset', alias: 'd', sql: `select d.id from datasets d where d.deleted_at is not null and not ${ACTIVE_JOB}` },
];

export interface EraseResult {
  deletedCount: number;
  cascadedModels: number;
}

/** Which trashed items a bulk erase takes: one workspace's (empty trash), those deleted before a time (purge), or both. */
export interface EraseScope {
  workspaceId?: string;
  deletedBefore?: Date;
}

/** Blobs of erased rows, deleted only after the transaction commits: a rollback must not lose files. */
interface Leftovers {
  workspaceId: string;
  keys: string[];
  images: Array<{ hash: string; ext: string }>;
}

/** Permanently deletes one item of the workspace's trash (404 when it is not there); waits for a lock another deletion holds. */
export async function eraseItem(em: EntityManager, storage: Storage, workspaceId: string, type: TrashType, id: string): Promise<EraseResult> {
  const { cascadedModels, leftovers } = await em.transactional(async (tx) => {
    const alias = type === 'dataset' ? 'd' : 'x';
    const [row] = await query<{ busy: boolean }>(
      tx,
      `select ${type === 'dataset' ? ACTIVE_JOB : 'false'} as busy from ${TRASH_TABLES[type]} ${alias}
       where ${alias}.id = ? and ${alias}.workspace_id = ? and ${alias}.deleted_at is not null for update of ${alias}`,
      [id, workspaceId],
    );
    if (!row) throw NotFound(`No ${type} ${id} in this workspace's trash`);
    if (row.busy) throw Conflict(`A job (an ingest) is working on dataset ${id}; wait for it to finish or cancel it, then delete it`);
    return eraseLocked(tx, type, id);
  });
  await releaseLeftovers(em, storage, [leftovers]);
  return { deletedCount: 1, cascadedModels };
}

/**
 * Permanently deletes every trashed item in scope, one item per transaction. Each transaction claims its
 * item with FOR UPDATE SKIP LOCKED, so any number of erasers (purge runners on several replicas, an
 * "empty trash" request) run at once: each item is deleted by exactly one of them, and none fails on
 * another. One item at a time also keeps the locks of a transaction few, so they cannot deadlock.
 */
export async function eraseTrash(em: EntityManager, storage: Storage, scope: EraseScope): Promise<EraseResult> {
  const total: EraseResult = { deletedCount: 0, cascadedModels: 0 };
  for (const claim of CLAIMS) {
    const a = claim.alias;
    const conditions = [scope.workspaceId ? `and ${a}.workspace_id = ?` : '', scope.deletedBefore ? `and ${a}.deleted_at < ?` : ''].join(' ');
    const params = [scope.workspaceId, scope.deletedBefore].filter((value) => value !== undefined);
    for (;;) {
      const erased = await em.transactional(async (tx) => {
        const [claimed] = await query<{ id: string }>(tx, `${claim.sql} ${conditions} order by ${a}.deleted_at, ${a}.id limit 1 for update skip locked`, params);
        return claimed ? eraseLocked(tx, claim.type, claimed.id) : undefined;
      });
      if (!erased) break;
      await releaseLeftovers(em, storage, [erased.leftovers]);
      total.deletedCount += 1;
      total.cascadedModels += erased.cascadedModels;
    }
  }
  return total;
}

/** Deletes the rows of a trashed item whose row this transaction has locked; returns what its blobs are. */
async function eraseLocked(tx: EntityManager, type: TrashType, id: string): Promise<{ cascadedModels: number; leftovers: Leftovers }> {
  return type === 'dataset' ? { cascadedModels: 0, leftovers: await eraseDataset(tx, id) } : eraseModels(tx, type, id);
}

/** The dataset's own files, as storage/blob-keys.ts lists the columns that hold them. */
const DATASET_FILES = datasetFilesSql();

/** A dataset with its images, labels, versions and stars (cascades); its files and the image bytes it used are leftovers. */
async function eraseDataset(tx: EntityManager, id: string): Promise<Leftovers> {
  const images = await query<{ hash: string; ext: string }>(
    tx,
    `select hash, ext from images where dataset_id = ?
     union select vi.hash, vi.ext from dataset_version_images vi join dataset_versions v on v.id = vi.version_id where v.dataset_id = ?`,
    [id, id],
  );
  const files = await query<{ key: string }>(tx, DATASET_FILES.sql, Array<string>(DATASET_FILES.params).fill(id));
  const uploads = await query<{ key: string }>(tx, `delete from upload_sessions where asset_type = 'datasets' and asset_id = ? returning object_key as key`, [id]);
  const [{ workspace_id }] = await query<{ workspace_id: string }>(tx, 'delete from datasets where id = ? returning workspace_id', [id]);
  const keys = [...new Set([...files, ...uploads].map((row) => row.key))];
  return { workspaceId: workspace_id, keys, images };
}

/**
 * A model, or a project with all its models (the cascade); weights are leftovers only where no model row
 * refers to them any more (clones share them), and so are the files of the models' unfinished uploads.
 */
async function eraseModels(tx: EntityManager, type: 'project' | 'model', id: string): Promise<{ cascadedModels: number; leftovers: Leftovers }> {
  // The project's models are locked first, so a concurrent erase of one of them finishes before they are counted.
  const models = await query<{ id: string; file_key: string | null }>(
    tx,
    type === 'project' ? 'select id, file_key from models where project_id = ? order by id for update' : 'select id, file_key from models where id = ?',
    [id],
  );
  const ids = models.map((model) => model.id);
  const uploads = await query<{ key: string }>(tx, `delete from upload_sessions where asset_type = 'models' and asset_id = any(?::text[]) returning object_key as key`, [pgArray(ids)]);
  const exportFiles = await exportFilesOf(tx, ids);
  const [{ workspace_id }] = await query<{ workspace_id: string }>(tx, `delete from ${TRASH_TABLES[type]} where id = ? returning workspace_id`, [id]);
  // The models' exports went with them (cascade); their files too, unless an export of another model shares one.
  const unusedExports = await unusedFiles(tx, exportFiles);
  const candidates = [...new Set([...models.flatMap((model) => (model.file_key ? [model.file_key] : [])), ...uploads.map((row) => row.key)])].sort();
  // Two transactions erasing two clones of the same weights would each still see the other's row; one at a time per key, the second sees the first's delete.
  await query(tx, 'select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(?::text[]) k', [pgArray(candidates)]);
  const unused = await query<{ key: string }>(tx, 'select k as key from unnest(?::text[]) k where not exists (select 1 from models where file_key = k)', [pgArray(candidates)]);
  const keys = [...unused.map((row) => row.key), ...unusedExports];
  return { cascadedModels: type === 'project' ? models.length : 0, leftovers: { workspaceId: workspace_id, keys, images: [] } };
}

/** Deletes the files, then the image bytes nothing else in the workspace uses (shared by hash with other datasets and versions). */
async function releaseLeftovers(em: EntityManager, storage: Storage, leftovers: Leftovers[]): Promise<void> {
  for (const { workspaceId, keys, images } of leftovers) {
    // Each record goes after its file, so a file a crash leaves behind is still recorded and the hourly sweep finds it.
    for (const key of keys) {
      await storage.store.delete(key);
      await query(em, 'delete from stored_objects where key = ?', [key]);
    }
    if (images.length) await releaseImageBlobs(em, storage, workspaceId, images);
  }
}
