import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';
import { BlobExists } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { keepImageBytes } from './image-blobs.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';

/** An image file as stored: bytes live per workspace and hash. */
export interface StoredFile {
  workspaceId: string;
  hash: string;
  ext: string;
}

/** Blobs streamed at once: enough to overlap store round trips, few enough to bound open streams. */
const PARALLEL_COPIES = 8;
/** Keys looked up per query. */
const KEYS_PER_QUERY = 1000;

/**
 * Makes the bytes (image and thumbnail) of files stored in other workspaces present under workspace `to`,
 * where images of `to` look for them. Keys already recorded there are left alone, so a second call copies
 * only what is missing. The storage record is written before the bytes, so bytes a crash leaves behind
 * are known to the hourly sweep. Files of `to` itself need nothing.
 */
export async function copyImageBytes(em: EntityManager, storage: Storage, to: string, files: StoredFile[]): Promise<void> {
  const copies = foreignFiles(to, files).flatMap((file) => [
    { from: imageKey(file.workspaceId, file.hash, file.ext), to: imageKey(to, file.hash, file.ext) },
    { from: thumbnailKey(file.workspaceId, file.hash), to: thumbnailKey(to, file.hash) },
  ]);
  const missing: typeof copies = [];
  for (let start = 0; start < copies.length; start += KEYS_PER_QUERY) {
    const batch = copies.slice(start, start + KEYS_PER_QUERY);
    const recorded = await query<{ key: string }>(em, 'select key from stored_objects where key = any(?::text[])', [pgArray(batch.map((copy) => copy.to))]);
    const present = new Set(recorded.map((row) => row.key));
    missing.push(...batch.filter((copy) => !present.has(copy.to)));
  }
  // Workers stop at the first failure and all are awaited, so nothing is still copying when the caller cleans up.
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < missing.length && !failed) {
      const copy = missing[next++];
      await copyBlob(em, storage, to, copy.from, copy.to).catch((error: unknown) => {
        failed = true;
        throw error;
      });
    }
  };
  const results = await Promise.allSettled(Array.from({ length: PARALLEL_COPIES }, worker));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
}

/**
 * Inside the transaction that inserts the rows, after the dataset locks: keeps the bytes of `to` from
 * being released before the rows commit (`keepImageBytes`), and copies again whatever a release removed
 * between `copyImageBytes` and the lock.
 */
export async function holdImageBytes(tx: EntityManager, storage: Storage, to: string, files: StoredFile[]): Promise<void> {
  await keepImageBytes(tx, to);
  await copyImageBytes(tx, storage, to, files);
}

/** The distinct files stored outside `to`: the ones with bytes to copy. */
export function foreignFiles(to: string, files: StoredFile[]): StoredFile[] {
  return [...new Map(files.filter((file) => file.workspaceId !== to).map((file) => [`${file.hash}.${file.ext}`, file])).values()];
}

async function copyBlob(em: EntityManager, storage: Storage, workspaceId: string, fromKey: string, toKey: string): Promise<void> {
  // Undecodable images have no thumbnail; a missing source stays missing in the copy, as it was.
  const blob = await storage.store.get(fromKey);
  if (!blob) return;
  await query(
    em,
    `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values (?, now(), now(), ?, 'datasetImages', ?, ?) on conflict (key) do nothing`,
    [newId(), workspaceId, toKey, blob.size],
  );
  try {
    await storage.store.put(toKey, blob.stream, { contentType: blob.contentType, expectedBytes: blob.size, createOnly: true });
  } catch (error) {
    blob.stream.destroy();
    // Create-only: bytes already there (the same file copied or uploaded meanwhile) are the same bytes.
    if (!(error instanceof BlobExists)) throw error;
  }
}
