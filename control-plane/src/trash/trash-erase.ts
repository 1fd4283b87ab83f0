import type { EntityManager } from '@mikro-orm/postgresql';
import {
  claimTrashedDataset,
  datasetFiles,
  deleteDataset,
  imageFilesOfDatasetAndVersions,
  lockTrashedDataset,
  type TrashScope,
} from '../datasets/dataset.store.ts';
import { Conflict, NotFound } from '../http/errors.ts';
import { exportFilesOf, unusedFiles } from '../exports/export.store.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import {
  claimTrashedModel,
  deleteModel,
  keysNoModelUses,
  lockTrashedModel,
  lockWeightKeys,
  modelFilesToErase,
} from '../models/model.store.ts';
import { claimTrashedProject, deleteProject, lockTrashedProject } from '../projects/project.store.ts';
import { deleteDatasetUploads, deleteModelUploads } from '../uploads/upload-session.store.ts';
import type { Storage } from '../storage/storage.ts';
import { forgetObject } from '../storage/stored-object.store.ts';

export const TRASH_TYPES = ['project', 'dataset', 'model'] as const;
export type TrashType = (typeof TRASH_TYPES)[number];

/**
 * What bulk erasing picks, in this order: models trashed on their own (so they count as deleted items,
 * not as models cascaded with a project), then projects with all their models, then datasets no job is
 * working on. Models trashed with their project go with the project. Each claims one item with FOR UPDATE
 * SKIP LOCKED, oldest deletion first.
 */
const CLAIMS: Array<{ type: TrashType; claim: (tx: EntityManager, scope: TrashScope) => Promise<string | undefined> }> =
  [
    { type: 'model', claim: claimTrashedModel },
    { type: 'project', claim: claimTrashedProject },
    { type: 'dataset', claim: claimTrashedDataset },
  ];

export interface EraseResult {
  deletedCount: number;
  cascadedModels: number;
}

/** Which trashed items a bulk erase takes: one workspace's (empty trash), those deleted before a time (purge), or both. */
export type EraseScope = TrashScope;

/** Blobs of erased rows, deleted only after the transaction commits: a rollback must not lose files. */
interface Leftovers {
  workspaceId: string;
  keys: string[];
  images: Array<{ hash: string; ext: string }>;
}

/** Permanently deletes one item of the workspace's trash (404 when it is not there); waits for a lock another deletion holds. */
export async function eraseItem(
  em: EntityManager,
  storage: Storage,
  workspaceId: string,
  type: TrashType,
  id: string,
): Promise<EraseResult> {
  const { cascadedModels, leftovers } = await em.transactional(async (tx) => {
    const row =
      type === 'dataset'
        ? await lockTrashedDataset(tx, id, workspaceId)
        : (await (type === 'project' ? lockTrashedProject : lockTrashedModel)(tx, id, workspaceId))
          ? { busy: false }
          : undefined;
    if (!row) throw NotFound(`No ${type} ${id} in this workspace's trash`);
    if (row.busy)
      throw Conflict(
        `A job (an ingest) is working on dataset ${id}; wait for it to finish or cancel it, then delete it`,
      );
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
    for (;;) {
      const erased = await em.transactional(async (tx) => {
        const claimed = await claim.claim(tx, scope);
        return claimed ? eraseLocked(tx, claim.type, claimed) : undefined;
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
async function eraseLocked(
  tx: EntityManager,
  type: TrashType,
  id: string,
): Promise<{ cascadedModels: number; leftovers: Leftovers }> {
  return type === 'dataset' ? { cascadedModels: 0, leftovers: await eraseDataset(tx, id) } : eraseModels(tx, type, id);
}

/** A dataset with its images, labels, versions and stars (cascades); its files and the image bytes it used are leftovers. */
async function eraseDataset(tx: EntityManager, id: string): Promise<Leftovers> {
  const images = await imageFilesOfDatasetAndVersions(tx, id);
  const files = await datasetFiles(tx, id);
  const uploads = await deleteDatasetUploads(tx, id);
  const workspace_id = await deleteDataset(tx, id);
  const keys = [...new Set([...files, ...uploads].map((row) => row.key))];
  return { workspaceId: workspace_id, keys, images };
}

/**
 * A model, or a project with all its models (the cascade); weights are leftovers only where no model row
 * refers to them any more (clones share them), and so are the files of the models' unfinished uploads.
 */
async function eraseModels(
  tx: EntityManager,
  type: 'project' | 'model',
  id: string,
): Promise<{ cascadedModels: number; leftovers: Leftovers }> {
  // The project's models are locked first, so a concurrent erase of one of them finishes before they are counted.
  const models = await modelFilesToErase(tx, type, id);
  const ids = models.map((model) => model.id);
  const uploads = await deleteModelUploads(tx, ids);
  const exportFiles = await exportFilesOf(tx, ids);
  const workspace_id = await (type === 'project' ? deleteProject : deleteModel)(tx, id);
  // The models' exports went with them (cascade); their files too, unless an export of another model shares one.
  const unusedExports = await unusedFiles(tx, exportFiles);
  const candidates = [
    ...new Set([
      ...models.flatMap((model) => (model.file_key ? [model.file_key] : [])),
      ...uploads.map((row) => row.key),
    ]),
  ].sort();
  // Two transactions erasing two clones of the same weights would each still see the other's row; one at a time per key, the second sees the first's delete.
  await lockWeightKeys(tx, candidates);
  const unused = await keysNoModelUses(tx, candidates);
  const keys = [...unused, ...unusedExports];
  return {
    cascadedModels: type === 'project' ? models.length : 0,
    leftovers: { workspaceId: workspace_id, keys, images: [] },
  };
}

/** Deletes the files, then the image bytes nothing else in the workspace uses (shared by hash with other datasets and versions). */
async function releaseLeftovers(em: EntityManager, storage: Storage, leftovers: Leftovers[]): Promise<void> {
  for (const { workspaceId, keys, images } of leftovers) {
    // Each record goes after its file, so a file a crash leaves behind is still recorded and the hourly sweep finds it.
    for (const key of keys) {
      await storage.store.delete(key);
      await forgetObject(em, key);
    }
    if (images.length) await releaseImageBlobs(em, storage, workspaceId, images);
  }
}
