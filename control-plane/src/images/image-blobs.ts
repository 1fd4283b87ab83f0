import type { EntityManager } from '@mikro-orm/postgresql';
import { discardStagedOfEndedJobs } from '../ingest/staged-image.store.ts';
import type { Storage } from '../storage/storage.ts';
import {
  forgetObjects,
  lockImageBytesExclusive,
  lockImageBytesShared,
  orphanImageObjects,
} from '../storage/stored-object.store.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';
import { unusedHashes } from './image.store.ts';

/** Hashes released per transaction: one statement locks them, one finds the unused ones. */
const RELEASE_BATCH = 500;

/**
 * Keeps the workspace's image bytes from being released until the transaction ends. Writers take it
 * (shared, so they never wait for each other) while they check their bytes are stored and insert the
 * rows that use them; a release takes it exclusively while it checks nothing uses the bytes and deletes
 * them. So a release never deletes bytes a new row points at, however many images a transaction adds.
 */
export async function keepImageBytes(em: EntityManager, workspaceId: string): Promise<void> {
  await lockImageBytesShared(em, workspaceId);
}

/**
 * Deletes the stored bytes of images nothing in the workspace refers to any more: no image row, no
 * saved dataset version (restoring one needs the bytes) and no ingest that has them staged.
 */
export async function releaseImageBlobs(
  em: EntityManager,
  storage: Storage,
  workspaceId: string,
  files: Array<{ hash: string; ext: string }>,
): Promise<void> {
  const unique = [...new Map(files.map((file) => [`${file.hash}.${file.ext}`, file])).values()];
  for (let start = 0; start < unique.length; start += RELEASE_BATCH) {
    const batch = unique.slice(start, start + RELEASE_BATCH);
    await em.transactional(async (tx) => {
      await lockImageBytesExclusive(tx, workspaceId);
      const unused = new Set(
        await unusedHashes(
          tx,
          workspaceId,
          batch.map((file) => file.hash),
        ),
      );
      const keys = batch
        .filter((file) => unused.has(file.hash))
        .flatMap((file) => [imageKey(workspaceId, file.hash, file.ext), thumbnailKey(workspaceId, file.hash)]);
      if (keys.length === 0) return;
      await forgetObjects(tx, keys);
      for (const key of keys) await storage.store.delete(key);
    });
  }
}

/** Stored bytes younger than this may belong to an ingest or intake still on its way to its rows. */
const ORPHAN_AGE_HOURS = 24;

/**
 * The safety net behind every cleanup that a crash can interrupt: staged rows of jobs that have ended,
 * and image bytes stored over a day ago that nothing refers to (a process died between storing them and
 * recording their use), are removed. Runs hourly; safe on several replicas at once (hash locks).
 */
export async function sweepOrphanImageBlobs(em: EntityManager, storage: Storage): Promise<number> {
  const leftovers = await discardStagedOfEndedJobs(em);
  // A thumbnail alone counts too: an image indexed in place has no stored original. Per hash, the original's row
  // (which names the extension) is taken when there is one.
  const candidates = await orphanImageObjects(em, ORPHAN_AGE_HOURS);
  const byWorkspace = new Map<string, Array<{ hash: string; ext: string }>>();
  for (const row of [...leftovers, ...candidates]) {
    const files = byWorkspace.get(row.workspace_id);
    if (files) files.push(row);
    else byWorkspace.set(row.workspace_id, [row]);
  }
  for (const [workspaceId, files] of byWorkspace) await releaseImageBlobs(em, storage, workspaceId, files);
  return candidates.length;
}
