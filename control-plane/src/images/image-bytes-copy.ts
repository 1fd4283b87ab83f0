import type { EntityManager } from '@mikro-orm/postgresql';
import { BlobExists } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { recordImageObjects, recordedKeys } from '../storage/stored-object.store.ts';
import { imageContentType } from './image-bytes.ts';
import { keepImageBytes } from './image-blobs.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';

/** An image file as stored: bytes live per workspace and hash; an image indexed in place has only its thumbnail stored. */
export interface StoredFile {
  workspaceId: string;
  hash: string;
  ext: string;
  /** An image indexed in place (connected storage): its bytes are read from there, by the image's id. */
  id?: string;
  referenceKey?: string | null;
}

/** A blob to make present under `to`: copied from another key, or read from the connected storage of an image indexed in place. */
interface Copy {
  to: string;
  from?: string;
  referenced?: { id: string; workspaceId: string };
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
export async function copyImageBytes(
  em: EntityManager,
  storage: Storage,
  to: string,
  files: StoredFile[],
): Promise<void> {
  const copies: Copy[] = [
    ...foreignFiles(to, files).flatMap((file) => [
      ...(file.referenceKey
        ? []
        : [{ from: imageKey(file.workspaceId, file.hash, file.ext), to: imageKey(to, file.hash, file.ext) }]),
      { from: thumbnailKey(file.workspaceId, file.hash), to: thumbnailKey(to, file.hash) },
    ]),
    // A copy of an image indexed in place is an ordinary image: its bytes are read once from the storage and kept (even in the same workspace).
    ...uniqueFiles(files.filter((file) => file.referenceKey && file.id)).map((file) => ({
      referenced: { id: file.id!, workspaceId: file.workspaceId },
      to: imageKey(to, file.hash, file.ext),
    })),
  ];
  const missing: Copy[] = [];
  for (let start = 0; start < copies.length; start += KEYS_PER_QUERY) {
    const batch = copies.slice(start, start + KEYS_PER_QUERY);
    const present = new Set(
      await recordedKeys(
        em,
        batch.map((copy) => copy.to),
      ),
    );
    missing.push(...batch.filter((copy) => !present.has(copy.to)));
  }
  // Workers stop at the first failure and all are awaited, so nothing is still copying when the caller cleans up.
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < missing.length && !failed) {
      const copy = missing[next++];
      await copyBlob(em, storage, to, copy).catch((error: unknown) => {
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
export async function holdImageBytes(
  tx: EntityManager,
  storage: Storage,
  to: string,
  files: StoredFile[],
): Promise<void> {
  await keepImageBytes(tx, to);
  await copyImageBytes(tx, storage, to, files);
}

/** The distinct files stored outside `to`: the ones with bytes to copy. */
export function foreignFiles(to: string, files: StoredFile[]): StoredFile[] {
  return uniqueFiles(files.filter((file) => file.workspaceId !== to));
}

const uniqueFiles = (files: StoredFile[]) => [
  ...new Map(files.map((file) => [`${file.hash}.${file.ext}`, file])).values(),
];

async function copyBlob(em: EntityManager, storage: Storage, workspaceId: string, copy: Copy): Promise<void> {
  const toKey = copy.to;
  // Undecodable images have no thumbnail; a missing source stays missing in the copy, as it was.
  const blob = copy.referenced ? await readReferenced(storage, copy.referenced) : await storage.store.get(copy.from!);
  if (!blob) return;
  await recordImageObjects(em, workspaceId, [{ key: toKey, bytes: blob.size }]);
  try {
    await storage.store.put(toKey, blob.stream, {
      contentType: blob.contentType,
      expectedBytes: blob.size,
      createOnly: true,
    });
  } catch (error) {
    blob.stream.destroy();
    // Create-only: bytes already there (the same file copied or uploaded meanwhile) are the same bytes.
    if (!(error instanceof BlobExists)) throw error;
  }
}

/** An image's bytes from its connected storage, as a blob to store (an HttpError, 404 or 409, when they cannot be had: the copy is refused). */
async function readReferenced(storage: Storage, image: { id: string; workspaceId: string }) {
  if (!storage.references) throw new Error('no reader of connected storage in this process');
  const read = await storage.references.open(image);
  return { stream: read.stream, size: read.bytes, contentType: imageContentType(read.ext) };
}
