import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { applyDelta, countDelta, lockDataset, type CountDelta } from '../datasets/dataset-counters.ts';
import { Dataset, type Split } from '../datasets/dataset.entity.ts';
import { newId } from '../db/ids.ts';
import { BlobExists } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { recordImageObjects } from '../storage/stored-object.store.ts';
import { imageContentType } from './image-bytes.ts';
import { decodeImage, sizeOf, type DecodedImage, type ImageFile } from './image-decode.ts';
import { keepImageBytes, releaseImageBlobs } from './image-blobs.ts';
import { checkLabels, classIdsOf, insertAnnotations, type CheckedLabels } from './image-labels.ts';
import { searchTextOf } from './image-search.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';
import { insertImageRows } from './image.store.ts';
import type { Label } from './labels.ts';

export interface NewImage {
  bytes: Buffer;
  filename: string;
  split?: Split;
  labels?: Label[];
  metadata?: Record<string, unknown>;
}

/** A decoded, stored image ready to become a row: what `insertImages` writes. */
export interface ImageRowInput {
  file: Omit<DecodedImage, 'thumbnail'>;
  name: string;
  split: Split;
  metadata: Record<string, unknown>;
  checked: CheckedLabels;
  /** Checked by the face detector and blurred where it found faces. */
  facesBlurred: boolean;
  /** Indexed in place: the object (key beneath the dataset's reference) and its version. */
  reference?: { key: string; version: string | null };
}

/** An object about to be stored, as its storage record names it. */
export interface ObjectRecord {
  key: string;
  bytes: number;
}

/** Writes the storage records of objects about to be stored (recordImageObjects, or a batch of several callers'). */
export type ObjectRecorder = (objects: ObjectRecord[]) => Promise<void>;

/**
 * Puts an image and its thumbnail unless already stored (bytes are shared by hash). Their storage records
 * are written first (by `record`), so bytes a crash leaves behind are always known to the hourly sweep. A file on disk
 * is streamed, never read whole. `body` null: the image is read in place (connected storage), only its thumbnail is kept.
 */
export async function storeImageFiles(
  em: EntityManager,
  storage: Storage,
  workspaceId: string,
  file: DecodedImage,
  body: ImageFile | null,
  record: ObjectRecorder = (objects) => recordImageObjects(em, workspaceId, objects),
): Promise<void> {
  const blobs: Array<{ key: string; body: ImageFile; contentType: string }> = body
    ? [{ key: imageKey(workspaceId, file.hash, file.ext), body, contentType: imageContentType(file.ext) }]
    : [];
  if (file.thumbnail)
    blobs.push({ key: thumbnailKey(workspaceId, file.hash), body: file.thumbnail, contentType: 'image/webp' });
  if (blobs.length === 0) return;
  await record(blobs.map((blob) => ({ key: blob.key, bytes: sizeOf(blob.body) })));
  for (const blob of blobs) {
    const stream = Buffer.isBuffer(blob.body) ? Readable.from([blob.body]) : createReadStream(blob.body.path);
    // Create-only: bytes already there (the same file added before) are left as they are.
    await storage.store
      .put(blob.key, stream, { contentType: blob.contentType, expectedBytes: sizeOf(blob.body), createOnly: true })
      .catch((error: unknown) => {
        stream.destroy();
        if (!(error instanceof BlobExists)) throw error;
      });
  }
}

/**
 * Inserts image rows and their labels; returns the new ids and what they add to the counters. The
 * caller holds the dataset lock and `keepImageBytes`, and applies the delta.
 */
export async function insertImages(
  em: EntityManager,
  dataset: Dataset,
  rows: ImageRowInput[],
): Promise<{ ids: string[]; delta: CountDelta }> {
  const ids = rows.map(() => newId());
  await insertImageRows(
    em,
    dataset.workspace.id,
    dataset.id,
    rows.map(({ file, name, split, metadata, checked, facesBlurred, reference }, i) => ({
      id: ids[i],
      hash: file.hash,
      ext: file.ext,
      name,
      width: file.width,
      height: file.height,
      channels: file.channels,
      split,
      bytes: file.bytes,
      error: file.error,
      metadata,
      searchText: searchTextOf(name, metadata),
      labelCount: checked.labels.length,
      classIds: classIdsOf(checked.labels),
      facesBlurred,
      referenceKey: reference?.key ?? null,
      referenceVersion: reference?.version ?? null,
    })),
  );
  await insertAnnotations(
    em,
    dataset.id,
    rows.map(({ checked }, i) => ({ imageId: ids[i], ...checked })),
  );
  const delta = countDelta(
    rows.map(({ split, file, checked }) => ({
      split,
      labelCount: checked.labels.length,
      hasError: file.error !== null,
    })),
    1,
  );
  return { ids, delta };
}

/**
 * Adds images to a dataset in one step: decodes them, stores bytes and thumbnails, then inserts rows,
 * labels and counters in one transaction under the dataset lock, where labels are checked against the
 * classes as they are at that moment. Ingest goes through the same pieces in stages.
 */
export class ImageIntake {
  private readonly em: EntityManager;
  private readonly storage: Storage;

  constructor(em: EntityManager, storage: Storage) {
    this.em = em;
    this.storage = storage;
  }

  async add(datasetId: string, images: NewImage[]): Promise<string[]> {
    const dataset = await this.em.findOneOrFail(Dataset, datasetId);
    const workspaceId = dataset.workspace.id;
    // Refused before anything is stored; checked again under the lock, where classes cannot change.
    for (const image of images) checkLabels(dataset, image.labels ?? []);
    const decoded = await Promise.all(images.map((image) => decodeImage(image.bytes, image.filename)));
    // Bytes go to the store before the transaction, so the dataset lock is never held during uploads.
    await Promise.all(
      decoded.map((file, i) => storeImageFiles(this.em, this.storage, workspaceId, file, images[i].bytes)),
    );
    try {
      return await this.em.transactional(async (em) => {
        await lockDataset(em, datasetId);
        const current = await em.findOneOrFail(Dataset, datasetId, { refresh: true });
        // Under the hash locks a concurrent release cannot delete what the new rows will point at.
        await keepImageBytes(em, workspaceId);
        await Promise.all(
          decoded.map((file, i) => storeImageFiles(em, this.storage, workspaceId, file, images[i].bytes)),
        );
        const rows = images.map((image, i) => ({
          file: decoded[i],
          name: image.filename,
          split: image.split ?? 'train',
          metadata: image.metadata ?? {},
          checked: checkLabels(current, image.labels ?? []),
          // Not checked here: a dataset with blurFaces has them blurred by its face blur job.
          facesBlurred: false,
        }));
        const { ids, delta } = await insertImages(em, current, rows);
        await applyDelta(em, datasetId, delta);
        return ids;
      });
    } catch (error) {
      // Nothing was added: bytes no other image uses go again.
      await releaseImageBlobs(this.em, this.storage, workspaceId, decoded);
      throw error;
    }
  }
}
