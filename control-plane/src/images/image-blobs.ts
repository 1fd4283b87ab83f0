import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { discardStagedOfEndedJobs } from '../ingest/staged-image.store.ts';
import type { Storage } from '../storage/storage.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';
import { unusedHashes } from './image.store.ts';

/** Hashes released per transaction: one statement locks them, one finds the unused ones. */
const RELEASE_BATCH = 500;

/** One advisory lock per workspace guards its image bytes: shared by writers, exclusive for a release. */
const bytesLock = (workspaceId: string) => `image-bytes:${workspaceId}`;

/**
 * Keeps the workspace's image bytes from being released until the transaction ends. Writers take it
 * (shared, so they never wait for each other) while they check their bytes are stored and insert the
 * rows that use them; a release takes it exclusively while it checks nothing uses the bytes and deletes
 * them. So a release never deletes bytes a new row points at, however many images a transaction adds.
 */
export async function keepImageBytes(em: EntityManager, workspaceId: string): Promise<void> {
  await query(em, 'select pg_advisory_xact_lock_shared(hashtextextended(?, 0))', [bytesLock(workspaceId)]);
}

/**
 * Deletes the stored bytes of images nothing in the workspace refers to any more: no image row, no
 * saved dataset version (restoring one needs the bytes) and no ingest that has them staged.
 */
export async function releaseImageBlobs(em: EntityManager, storage: Storage, workspaceId: string, files: Array<{ hash: string; ext: string }>): Promise<void> {
  const unique = [...new Map(files.map((file) => [`${file.hash}.${file.ext}`, file])).values()];
  for (let start = 0; start < unique.length; start += RELEASE_BATCH) {
    const batch = unique.slice(start, start + RELEASE_BATCH);
    await em.transactional(async (tx) => {
      await query(tx, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [bytesLock(workspaceId)]);
      const unused = new Set(await unusedHashes(tx, workspaceId, batch.map((file) => file.hash)));
      const keys = batch.filter((file) => unused.has(file.hash)).flatMap((file) => [imageKey(workspaceId, file.hash, file.ext), thumbnailKey(workspaceId, file.hash)]);
      if (keys.length === 0) return;
      await query(tx, 'delete from stored_objects where key = any(?::text[])', [pgArray(keys)]);
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
  const candidates = await query<{ workspace_id: string; hash: string; ext: string }>(
    em,
    `select distinct on (o.workspace_id, m[2]) o.workspace_id, m[2] as hash, m[3] as ext
     from stored_objects o, regexp_match(o.key, '/(images|thumbnails)/([0-9a-f]{64})\\.([a-z0-9]+)$') m
     where m is not null and o.kind = 'datasetImages' and o.created_at < now() - make_interval(hours => ?)
       and not exists (select 1 from images i where i.workspace_id = o.workspace_id and i.hash = m[2])
     order by o.workspace_id, m[2], m[1] = 'thumbnails'`,
    [ORPHAN_AGE_HOURS],
  );
  const byWorkspace = new Map<string, Array<{ hash: string; ext: string }>>();
  for (const row of [...leftovers, ...candidates]) {
    const files = byWorkspace.get(row.workspace_id);
    if (files) files.push(row);
    else byWorkspace.set(row.workspace_id, [row]);
  }
  for (const [workspaceId, files] of byWorkspace) await releaseImageBlobs(em, storage, workspaceId, files);
  return candidates.length;
}
