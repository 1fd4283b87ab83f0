import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { Storage } from './storage.ts';

/** Recorded files younger than this may be on their way to the row that will refer to them. */
const ORPHAN_AGE_HOURS = 24;

/**
 * Deletes recorded files (dataset archives and exports, model weights) that nothing refers to any more:
 * weights replaced by a new upload (clones may have shared them), and files whose rows were deleted by a
 * process that stopped before it deleted the files. Every column that can hold such a key is listed here.
 * A key nothing refers to never gets referred to again (keys carry the id of what they belong to), so the
 * check needs no lock. Image bytes have their own sweep (images/image-blobs.ts).
 */
export async function sweepOrphanFiles(em: EntityManager, storage: Storage): Promise<number> {
  const orphans = await query<{ key: string }>(
    em,
    `select o.key from stored_objects o
     where o.kind in ('datasetArchives', 'modelFiles', 'exports') and o.updated_at < now() - make_interval(hours => ?)
       and not exists (select 1 from models m where m.file_key = o.key)
       and not exists (select 1 from model_exports e where e.file_key = o.key or (e.weights_key = o.key and e.status is null))
       and not exists (select 1 from upload_sessions u where u.object_key = o.key)
       and not exists (select 1 from training_runs r where r.checkpoint_key = o.key or r.resume_key = o.key)
       and not exists (select 1 from datasets d where d.export_key = o.key)
       and not exists (select 1 from dataset_versions v where v.ndjson_key = o.key)
     limit 1000`,
    [ORPHAN_AGE_HOURS],
  );
  for (const { key } of orphans) {
    await storage.store.delete(key);
    await query(em, 'delete from stored_objects where key = ?', [key]);
  }
  return orphans.length;
}
