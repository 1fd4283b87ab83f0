import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { classColors, colorMap } from '../datasets/class-names.ts';
import { findDataset, type DatasetNeed } from '../datasets/dataset-access.ts';
import { applyDelta, changeDelta, countDelta, lockDataset, type CountedImage } from '../datasets/dataset-counters.ts';
import { isFileInVersions } from '../datasets/dataset-version.store.ts';
import { Dataset, type Split } from '../datasets/dataset.entity.ts';
import { HttpError, Invalid, NotFound } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { releaseImageBlobs } from './image-blobs.ts';
import { checkLabels, labelsOf, replaceLabels } from './image-labels.ts';
import { ImageListQuery, type VectorSearch } from './image-list.ts';
import { searchTextOf } from './image-search.ts';
import { ImageUrls } from './image-urls.ts';
import { findImage } from './image-access.ts';
import { Image } from './image.entity.ts';
import {
  copiesInSplit,
  countImagesByDataset,
  countedImagesOf,
  deleteDatasetImages,
  deleteImages,
  findCountedImage,
  moveImagesToSplit,
  updateImageMetadata,
  type CountedImageRow,
} from './image.store.ts';
import type { ImageRow } from './image-list.store.ts';
import type {
  BulkDeleted,
  BulkMoved,
  ImageDeleted,
  ImageDetail,
  ImageList,
  ImageListOptions,
  ImagePatch,
  ImagePatched,
  ImageUrlsResult,
} from './image.schemas.ts';
import { LABEL_PREVIEW_CAP } from './image.schemas.ts';

const counted = (row: CountedImageRow): CountedImage => ({
  split: row.split,
  labelCount: row.label_count,
  hasError: row.error !== null,
});

/** Images of datasets: lists, reads, label and metadata edits, split moves, deletes and signed URLs. */
/** `{ [name]: value }`, or nothing for a null value: optional answer fields are absent rather than null. */
function present<K extends string, V>(name: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [name]: value }) as { [P in K]?: V };
}

export class ImageService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly urls: ImageUrls;
  private readonly vectors?: VectorSearch;

  /** Without `vectors`, q lists text matches only. */
  constructor(em: EntityManager, storage: Storage, vectors?: VectorSearch) {
    this.em = em;
    this.storage = storage;
    this.urls = new ImageUrls(storage.urls);
    this.vectors = vectors;
  }

  async list(
    actor: Actor,
    owner: string,
    slug: string,
    options: ImageListOptions,
    imageIds?: string[],
  ): Promise<z.input<typeof ImageList>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const listing = new ImageListQuery(this.em, dataset, options, imageIds, this.vectors);
    const [rows, total] = await Promise.all([listing.page(), options.includeTotal ? listing.total() : null]);
    const page = rows.slice(0, options.limit);
    const hasMore = rows.length > options.limit;
    const labels = options.includeLabels
      ? await labelsOf(
          this.em,
          page.map((row) => row.id),
          LABEL_PREVIEW_CAP,
        )
      : undefined;
    const colors = classColors(dataset.classNames, dataset.classColors);
    return {
      images: await Promise.all(page.map((row) => this.listItem(dataset, row, options, labels))),
      ...(total === null ? {} : { total }),
      hasMore,
      classes: dataset.classNames,
      classColors: colorMap(colors),
      errorCount: dataset.errorCount,
      ...(hasMore && !options.q ? { nextCursor: page[page.length - 1].id } : {}),
    };
  }

  private async listItem(dataset: Dataset, row: ImageRow, options: ImageListOptions, labels?: Map<string, unknown[]>) {
    const ref = {
      id: row.id,
      workspaceId: dataset.workspace.id,
      hash: row.hash,
      ext: row.ext,
      name: row.name,
      error: row.error,
      referenceKey: row.reference_key,
    };
    return {
      id: row.id,
      hash: row.hash,
      ext: row.ext,
      name: row.name,
      ...(options.includeThumbnails ? present('thumbnailUrl', await this.urls.thumbnail(ref)) : {}),
      ...(options.includeImageUrls ? { imageUrl: await this.urls.image(ref) } : {}),
      width: row.width,
      height: row.height,
      split: row.split,
      labelCount: row.label_count,
      classIds: row.class_ids,
      bytes: Number(row.bytes),
      error: row.error,
      ...(labels ? { labels: (labels.get(row.id) ?? []) as never[] } : {}),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  async read(actor: Actor, imageId: string): Promise<z.input<typeof ImageDetail>> {
    const { image, dataset } = await findImage(this.em, actor, imageId, 'view');
    const labels = await labelsOf(this.em, [image.id]);
    const ref = {
      id: image.id,
      workspaceId: dataset.workspace.id,
      hash: image.hash,
      ext: image.ext,
      name: image.name,
      error: image.error ?? null,
      referenceKey: image.referenceKey,
    };
    const retained = await isFileInVersions(this.em, dataset.id, image.hash);
    return {
      id: image.id,
      dataset: { id: dataset.id, owner: dataset.workspace.handle, dataset: dataset.slug, task: dataset.task },
      metadata: image.metadata,
      properties: {
        id: image.id,
        datasetId: dataset.id,
        filename: image.name,
        hash: image.hash,
        ext: image.ext,
        extension: image.ext,
        annotationCount: image.labelCount,
        classIds: image.classIds,
        retainedByVersion: retained,
        width: image.width,
        height: image.height,
        channels: image.channels,
        split: image.split,
        labelCount: image.labelCount,
        bytes: image.bytes,
        error: image.error ?? null,
        createdAt: image.createdAt.toISOString(),
        updatedAt: image.updatedAt.toISOString(),
      },
      labels: labels.get(image.id) ?? [],
      classNames: dataset.classNames,
      imageUrl: await this.urls.image(ref),
      ...present('thumbnailUrl', await this.urls.thumbnail(ref)),
    };
  }

  async update(
    actor: Actor,
    imageId: string,
    patch: z.output<typeof ImagePatch>,
  ): Promise<z.input<typeof ImagePatched>> {
    const { image, dataset } = await findImage(this.em, actor, imageId, 'edit');
    if (patch.metadata) {
      const saved = await this.em.transactional(async (em) => {
        await lockDataset(em, dataset.id);
        const updated = await updateImageMetadata(
          em,
          image.id,
          patch.metadata,
          searchTextOf(image.name, patch.metadata ?? {}),
        );
        // Metadata is searched: filtered totals counted before this change are stale.
        await applyDelta(em, dataset.id, countDelta([], 1));
        return updated;
      });
      return {
        success: true,
        id: image.id,
        labelCount: image.labelCount,
        metadata: patch.metadata,
        updatedAt: new Date(saved!.updated_at).toISOString(),
      };
    }
    const labels = patch.labels ?? [];
    return this.em.transactional(async (em) => {
      await lockDataset(em, dataset.id);
      const before = await findCountedImage(em, image.id);
      if (!before) throw NotFound(`Image ${imageId} not found`);
      const checked = checkLabels(await em.findOneOrFail(Dataset, dataset.id, { refresh: true }), labels);
      await replaceLabels(em, dataset.id, [{ imageId: image.id, ...checked }]);
      await applyDelta(
        em,
        dataset.id,
        changeDelta([counted(before)], [{ ...counted(before), labelCount: checked.labels.length }]),
      );
      return { success: true as const, id: image.id, labelCount: checked.labels.length, labels: checked.labels };
    });
  }

  async remove(actor: Actor, imageId: string): Promise<z.input<typeof ImageDeleted>> {
    const { dataset } = await findImage(this.em, actor, imageId, 'edit');
    await this.deleteRows(dataset, [imageId]);
    return { success: true, id: imageId, deletedImageId: imageId, deletedCount: 1 };
  }

  /** The selected images, all of one dataset the actor has `need` access to; unknown IDs are 404. */
  private async selection(actor: Actor, imageIds: string[], need: DatasetNeed): Promise<Dataset> {
    const ids = [...new Set(imageIds)];
    const rows = await countImagesByDataset(this.em, ids);
    if (rows.length > 1) throw Invalid('imageIds: the images must all belong to one dataset');
    const found = rows[0]?.n ?? 0;
    if (found < ids.length) throw NotFound(`${ids.length - found} of the ${ids.length} images were not found`);
    const { image } = await findImage(this.em, actor, ids[0], need);
    return image.dataset;
  }

  async bulkDelete(actor: Actor, imageIds: string[]): Promise<z.input<typeof BulkDeleted>> {
    const dataset = await this.selection(actor, imageIds, 'edit');
    const deleted = await this.deleteRows(dataset, [...new Set(imageIds)]);
    return { success: true, deletedCount: deleted.length, deletedImageIds: deleted };
  }

  /** Deletes image rows (annotations cascade), adjusts the counters, then frees bytes nothing else uses. */
  private async deleteRows(dataset: Dataset, imageIds: string[]): Promise<string[]> {
    const removed = await this.em.transactional(async (em) => {
      await lockDataset(em, dataset.id);
      const rows = await deleteDatasetImages(em, dataset.id, imageIds);
      await applyDelta(em, dataset.id, countDelta(rows.map(counted), -1));
      return rows;
    });
    await releaseImageBlobs(this.em, this.storage, dataset.workspace.id, removed);
    return removed.map((row) => row.id);
  }

  /**
   * Moves images to a split. An image whose file (same hash) is already in the target split is a
   * conflict: 409 until a policy says what to do: skip it, keep both, or replace the copy already there.
   */
  async bulkMove(
    actor: Actor,
    body: { imageIds: string[]; split: Split; conflictPolicy?: 'skip' | 'keep_both' | 'replace' },
  ): Promise<z.input<typeof BulkMoved>> {
    const dataset = await this.selection(actor, body.imageIds, 'edit');
    const ids = [...new Set(body.imageIds)];
    const { moved, skipped, replaced } = await this.em.transactional(async (em) => {
      await lockDataset(em, dataset.id);
      const selected = await countedImagesOf(em, dataset.id, ids);
      const moving = selected.filter((row) => row.split !== body.split);
      const copies = await copiesInSplit(
        em,
        dataset.id,
        body.split,
        moving.map((row) => row.hash),
        ids,
      );
      const conflicted = new Set(copies.map((row) => row.hash));
      if (conflicted.size && !body.conflictPolicy) {
        const count = moving.filter((row) => conflicted.has(row.hash)).length;
        throw new HttpError(
          409,
          `${count} of the images are already in ${body.split} (same file); choose conflictPolicy skip, keep_both or replace`,
          { conflictCount: count },
        );
      }
      const toMove = body.conflictPolicy === 'skip' ? moving.filter((row) => !conflicted.has(row.hash)) : moving;
      let delta = changeDelta(
        toMove.map(counted),
        toMove.map((row) => ({ ...counted(row), split: body.split })),
      );
      if (body.conflictPolicy === 'replace' && copies.length) {
        await deleteImages(
          em,
          copies.map((row) => row.id),
        );
        delta = countDelta(copies.map(counted), -1, delta);
      }
      await moveImagesToSplit(
        em,
        toMove.map((row) => row.id),
        body.split,
      );
      await applyDelta(em, dataset.id, delta);
      return {
        moved: toMove.length,
        skipped: moving.length - toMove.length,
        replaced: body.conflictPolicy === 'replace' ? copies : [],
      };
    });
    await releaseImageBlobs(this.em, this.storage, dataset.workspace.id, replaced);
    return { success: true, modifiedCount: moved, skippedCount: skipped, targetSplit: body.split };
  }

  async signedUrls(actor: Actor, imageIds: string[]): Promise<z.input<typeof ImageUrlsResult>> {
    const dataset = await this.selection(actor, imageIds, 'view');
    const images = await this.em.find(Image, { id: { $in: imageIds }, dataset });
    const result: z.input<typeof ImageUrlsResult> = { urls: {}, thumbnails: {}, depths: {} };
    for (const image of images) {
      const ref = {
        id: image.id,
        workspaceId: dataset.workspace.id,
        hash: image.hash,
        ext: image.ext,
        name: image.name,
        error: image.error ?? null,
        referenceKey: image.referenceKey,
      };
      result.urls[image.id] = await this.urls.image(ref);
      const thumbnail = await this.urls.thumbnail(ref);
      if (thumbnail !== null) result.thumbnails[image.id] = thumbnail;
      // Depth maps are not stored yet: no image has a depths entry.
    }
    return result;
  }
}
