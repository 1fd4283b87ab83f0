import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { applyDelta, countDelta, lockDataset } from '../datasets/dataset-counters.ts';
import { Dataset, type Split } from '../datasets/dataset.entity.ts';
import { newId } from '../db/ids.ts';
import { query } from '../db/sql.ts';
import { BlobExists } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { decodeImage, type DecodedImage } from './image-decode.ts';
import { checkLabels, replaceLabels } from './image-labels.ts';
import { imageKey, thumbnailKey } from './image-urls.ts';
import { searchTextOf } from './image-search.ts';
import { lockImageHashes, releaseImageBlobs } from './image-blobs.ts';
import type { Label } from './labels.ts';

export interface NewImage {
  bytes: Buffer;
  filename: string;
  split?: Split;
  labels?: Label[];
  metadata?: Record<string, unknown>;
}

const CONTENT_TYPES: Record<string, string> = { jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp', gif: 'image/gif', tiff: 'image/tiff', avif: 'image/avif', heic: 'image/heic' };

/**
 * Adds images to a dataset: decodes them, stores bytes and thumbnails (shared by hash within the
 * workspace), then inserts rows, labels and counters in one transaction under the dataset lock. Labels
 * are checked there, against the classes as they are at that moment. Ingest builds on this.
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
    await Promise.all(decoded.map((file, i) => this.storeFiles(this.em, workspaceId, file, images[i].bytes)));
    try {
      return await this.insertRows(datasetId, workspaceId, images, decoded);
    } catch (error) {
      // Nothing was added: bytes no other image uses go again.
      await releaseImageBlobs(this.em, this.storage, workspaceId, decoded);
      throw error;
    }
  }

  private insertRows(datasetId: string, workspaceId: string, images: NewImage[], decoded: DecodedImage[]): Promise<string[]> {
    return this.em.transactional(async (em) => {
      await lockDataset(em, datasetId);
      const current = await em.findOneOrFail(Dataset, datasetId, { refresh: true });
      // Under the hash locks a concurrent release cannot delete what the new rows will point at.
      await lockImageHashes(em, workspaceId, decoded.map((file) => file.hash));
      await Promise.all(decoded.map((file, i) => this.storeFiles(em, workspaceId, file, images[i].bytes)));
      const rows = images.map((image, i) => ({ id: newId(), image, file: decoded[i], checked: checkLabels(current, image.labels ?? []) }));
      for (const { id, image, file } of rows) {
        const metadata = image.metadata ?? {};
        await query(
          em,
          `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, channels, split, bytes, error, metadata, search_text)
           values (?, clock_timestamp(), clock_timestamp(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?)`,
          [id, workspaceId, datasetId, file.hash, file.ext, image.filename, file.width, file.height, file.channels, image.split ?? 'train', file.bytes, file.error, JSON.stringify(metadata), searchTextOf(image.filename, metadata)],
        );
      }
      await replaceLabels(em, datasetId, rows.map(({ id, checked }) => ({ imageId: id, ...checked })));
      const counted = rows.map(({ image, file, checked }) => ({ split: image.split ?? 'train', labelCount: checked.labels.length, hasError: file.error !== null }));
      await applyDelta(em, datasetId, countDelta(counted, 1));
      return rows.map((row) => row.id);
    });
  }

  /** Puts the image and its thumbnail unless already stored, and records them for storage accounting. */
  private async storeFiles(em: EntityManager, workspaceId: string, file: DecodedImage, bytes: Buffer): Promise<void> {
    await this.putOnce(em, workspaceId, imageKey(workspaceId, file.hash, file.ext), bytes, CONTENT_TYPES[file.ext] ?? 'application/octet-stream');
    if (file.thumbnail) await this.putOnce(em, workspaceId, thumbnailKey(workspaceId, file.hash), file.thumbnail, 'image/webp');
  }

  private async putOnce(em: EntityManager, workspaceId: string, key: string, body: Buffer, contentType: string): Promise<void> {
    if (!(await this.storage.store.head(key))) {
      await this.storage.store.put(key, Readable.from([body]), { contentType, expectedBytes: body.length, createOnly: true }).catch((error: unknown) => {
        if (!(error instanceof BlobExists)) throw error;
      });
    }
    await query(
      em,
      `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values (?, now(), now(), ?, 'datasetImages', ?, ?) on conflict (key) do nothing`,
      [newId(), workspaceId, key, body.length],
    );
  }
}
