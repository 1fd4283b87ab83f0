import type { EntityManager } from '@mikro-orm/postgresql';
import type { Storage } from './storage.ts';
import { forgetObject, orphanFileKeys } from './stored-object.store.ts';

/** Recorded files younger than this may be on their way to the row that will refer to them. */
const ORPHAN_AGE_HOURS = 24;

/**
 * Deletes recorded files (dataset archives and exports, model weights) that nothing refers to any more:
 * weights replaced by a new upload (clones may have shared them), and files whose rows were deleted by a
 * process that stopped before it deleted the files. Every column that can hold such a key is listed in
 * blob-keys.ts. A key nothing refers to never gets referred to again (keys carry the id of what they belong to), so the
 * check needs no lock. Image bytes have their own sweep (images/image-blobs.ts).
 */
export async function sweepOrphanFiles(em: EntityManager, storage: Storage): Promise<number> {
  const orphans = await orphanFileKeys(em, ORPHAN_AGE_HOURS);
  for (const key of orphans) {
    await storage.store.delete(key);
    await forgetObject(em, key);
  }
  return orphans.length;
}
