import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import type { Storage } from '../storage/storage.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';

/**
 * Transaction-scoped locks on (workspace, hash), taken in a fixed order. Adding an image holds them while
 * it checks the bytes are stored and inserts the row; releasing holds them while it checks nothing
 * refers to the bytes and deletes them. So a release never deletes bytes a new row points at.
 */
export async function lockImageHashes(em: EntityManager, workspaceId: string, hashes: string[]): Promise<void> {
  for (const hash of [...new Set(hashes)].sort()) {
    await query(em, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [`image:${workspaceId}:${hash}`]);
  }
}

/**
 * Deletes the stored bytes of images no row of the workspace refers to any more (after their rows are gone).
 * A saved dataset version of the workspace counts as a user: restoring it needs the bytes.
 */
export async function releaseImageBlobs(em: EntityManager, storage: Storage, workspaceId: string, files: Array<{ hash: string; ext: string }>): Promise<void> {
  const unique = new Map(files.map((file) => [`${file.hash}.${file.ext}`, file]));
  for (const file of unique.values()) {
    await em.transactional(async (tx) => {
      await lockImageHashes(tx, workspaceId, [file.hash]);
      const [used] = await query<{ used: boolean }>(
        tx,
        `select exists (select 1 from images where workspace_id = ? and hash = ?)
           or exists (select 1 from dataset_version_images vi join dataset_versions v on v.id = vi.version_id join datasets d on d.id = v.dataset_id
                      where d.workspace_id = ? and vi.hash = ?) as used`,
        [workspaceId, file.hash, workspaceId, file.hash],
      );
      if (used.used) return;
      const keys = [imageKey(workspaceId, file.hash, file.ext), thumbnailKey(workspaceId, file.hash)];
      await query(tx, 'delete from stored_objects where key = any(?::text[])', [pgArray(keys)]);
      for (const key of keys) await storage.store.delete(key);
    });
  }
}
