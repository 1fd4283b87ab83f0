import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { unreferencedSql } from './blob-keys.ts';
import type { Storage } from './storage.ts';

/** Recorded files younger than this may be on their way to the row that will refer to them. */
const ORPHAN_AGE_HOURS = 24;

/** No column that keeps an object refers to it (storage/blob-keys.ts). */
const UNREFERENCED = unreferencedSql();

/**
 * Deletes recorded files (dataset archives and exports, model weights) that nothing refers to any more:
 * weights replaced by a new upload (clones may have shared them), and files whose rows were deleted by a
 * process that stopped before it deleted the files. Every column that can hold such a key is listed in
 * blob-keys.ts. A key nothing refers to never gets referred to again (keys carry the id of what they belong to), so the
 * check needs no lock. Image bytes have their own sweep (images/image-blobs.ts).
 */
export async function sweepOrphanFiles(em: EntityManager, storage: Storage): Promise<number> {
  const orphans = await query<{ key: string }>(
    em,
    `select o.key from stored_objects o
     where o.kind in ('datasetArchives', 'modelFiles', 'exports') and o.updated_at < now() - make_interval(hours => ?)
       and ${UNREFERENCED}
     limit 1000`,
    [ORPHAN_AGE_HOURS],
  );
  for (const { key } of orphans) {
    await storage.store.delete(key);
    await query(em, 'delete from stored_objects where key = ?', [key]);
  }
  return orphans.length;
}
