import type { EntityManager } from '@mikro-orm/postgresql';
import { isDatasetLive } from '../datasets/dataset.store.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { storeImageFiles } from '../images/image-intake.ts';
import { blurTargetsAfter, findStoredImage } from '../images/image.store.ts';
import { JobFailure, type JobContext } from '../jobs/job-runner.ts';
import {
  readProgress,
  writeProgress,
  type BatchBlurPayload,
  type BlurProgress,
  type PreviewImage,
} from '../predict/batch-predict.store.ts';
import type { Storage } from '../storage/storage.ts';
import { blurStoredImage, replaceImageFile, type StoredImageRow } from './face-blur-stored.ts';
import { FaceDetectorMissing, type FaceDetector } from './face-detector.ts';

/** A preview processes at most this many images. */
export const PREVIEW_IMAGES = 6;
/** Image rows read per query while walking the targets. */
const TARGETS_PER_READ = 200;

/** Counts what a blur run takes (blurTargetsAfter), for admission (a preview takes at most PREVIEW_IMAGES of them). */
export { countBlurTargets } from '../images/image.store.ts';

/**
 * Batch face blur, run by BatchPredictJob for operation blur (the same job kind, so one run per dataset and the same
 * status and cancel). A preview blurs its images into new stored files (image and thumbnail) and keeps what it made
 * in its progress (previews), changing no image. A run applying a preview points each previewed image at the file the
 * preview made (when the image is as it was then and the file is still stored), and blurs the others; a plain run
 * blurs every image. Images get new bytes the way blurFaces does (replaceImageFile); labels and versions are left alone.
 */
export class BatchBlurJob {
  private readonly storage: Storage;
  private readonly detector: FaceDetector;

  constructor(storage: Storage, detector: FaceDetector) {
    this.storage = storage;
    this.detector = detector;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const payload = context.payload as unknown as BatchBlurPayload;
    const { em } = context;
    try {
      this.detector.requireModel();
    } catch (error) {
      if (error instanceof FaceDetectorMissing) throw new JobFailure(error.message);
      throw error;
    }
    if (!(await isDatasetLive(em, payload.datasetId))) throw new JobFailure('The dataset was deleted');
    const saved = await readProgress<BlurProgress>(em, context.id);
    const state: BlurProgress = {
      stage: payload.preview ? 'previewing' : 'blurring',
      percent: 0,
      processed: saved.processed ?? 0,
      total: saved.total ?? payload.total,
      faces: saved.faces ?? 0,
      blurred: saved.blurred ?? 0,
      skipped: saved.skipped ?? 0,
      lastImageId: saved.lastImageId ?? null,
      previews: saved.previews ?? [],
    };
    const prepared = new Map(
      (payload.previewJobId ? await this.preparedBy(em, payload.previewJobId) : []).map((image) => [
        image.imageId,
        image,
      ]),
    );
    for (;;) {
      const left = payload.preview ? PREVIEW_IMAGES - state.processed - state.skipped : TARGETS_PER_READ;
      if (left <= 0) break;
      const targets = await blurTargetsAfter(
        em,
        payload.datasetId,
        payload.imageId,
        state.lastImageId ?? '',
        Math.min(left, TARGETS_PER_READ),
      );
      if (targets.length === 0) break;
      for (const image of targets) {
        context.signal.throwIfAborted();
        if (payload.preview) await this.preview(context, payload, image, state);
        else await this.apply(context, payload, image, prepared.get(image.id), state);
        state.lastImageId = image.id;
        state.percent = Math.min(99, Math.floor(((state.processed + state.skipped) * 100) / Math.max(state.total, 1)));
        await em.transactional(async (tx) => {
          await context.confirmHeld(tx);
          await writeProgress(tx, context.id, state);
        });
      }
    }
    context.progress({ ...state, stage: 'done', percent: 100 });
    if (payload.previewJobId) await this.releasePrepared(em, context.workspaceId, [...prepared.values()]);
    return { processed: state.processed, faces: state.faces, blurred: state.blurred, skipped: state.skipped };
  }

  /** A cancelled or failed preview's files go; so do those of a preview whose applying run stopped (it cannot be applied again). */
  async discard(context: JobContext): Promise<void> {
    const payload = context.payload as unknown as BatchBlurPayload;
    const own = (await readProgress<BlurProgress>(context.em, context.id)).previews ?? [];
    const applied = payload.previewJobId ? await this.preparedBy(context.em, payload.previewJobId) : [];
    await this.releasePrepared(context.em, context.workspaceId, [...own, ...applied]);
  }

  /** Deletes a preview's files that no image uses (all of them unless it was applied). */
  async releasePrepared(
    em: EntityManager,
    workspaceId: string,
    images: Array<{ blurred: { hash: string; ext: string } | null }>,
  ): Promise<void> {
    await releaseImageBlobs(
      em,
      this.storage,
      workspaceId,
      images.flatMap((image) => (image.blurred ? [image.blurred] : [])),
    );
  }

  /** Blurs one image into new stored files without changing the image: what it made goes to state.previews. */
  private async preview(
    context: JobContext,
    payload: BatchBlurPayload,
    image: StoredImageRow,
    state: BlurProgress,
  ): Promise<void> {
    const result = await blurStoredImage(this.storage, this.detector, context.workspaceId, image, {
      threshold: payload.confidence,
      boxScale: payload.boxScale,
    });
    if ('skip' in result) {
      context.log.warn({ imageId: image.id, reason: result.skip }, 'face blur preview skipped an image');
      state.skipped += 1;
      return;
    }
    let blurred: PreviewImage['blurred'] = null;
    if (result.faces > 0) {
      await storeImageFiles(context.em, this.storage, context.workspaceId, result.file, result.body);
      blurred = {
        hash: result.file.hash,
        ext: result.file.ext,
        bytes: result.file.bytes,
        channels: result.file.channels,
      };
      state.blurred += 1;
    }
    state.processed += 1;
    state.faces += result.faces;
    state.previews.push({
      imageId: image.id,
      name: image.name,
      hash: image.hash,
      ext: image.ext,
      faces: result.faces,
      blurred,
    });
  }

  /** Blurs one image in place: with the preview's file when it made one for these bytes, else afresh. */
  private async apply(
    context: JobContext,
    payload: BatchBlurPayload,
    image: StoredImageRow,
    prepared: PreviewImage | undefined,
    state: BlurProgress,
  ): Promise<void> {
    const first = (tx: EntityManager) => context.confirmHeld(tx);
    if (prepared && prepared.hash === image.hash) {
      if (!prepared.blurred) {
        state.processed += 1;
        return;
      }
      if (
        await replaceImageFile(context.em, this.storage, context.workspaceId, image, prepared.blurred, {
          markChecked: false,
          ifStored: true,
          first,
        })
      ) {
        state.processed += 1;
        state.faces += prepared.faces;
        state.blurred += 1;
        return;
      }
    }
    // Read again: a prepared file that could not be used may be because the image changed meanwhile.
    const current = await findStoredImage(context.em, image.id, payload.datasetId);
    if (!current) return;
    const result = await blurStoredImage(this.storage, this.detector, context.workspaceId, current, {
      threshold: payload.confidence,
      boxScale: payload.boxScale,
    });
    if ('skip' in result) {
      context.log.warn({ imageId: image.id, reason: result.skip }, 'face blur skipped an image');
      state.skipped += 1;
      return;
    }
    state.processed += 1;
    state.faces += result.faces;
    if (result.faces === 0) return;
    await storeImageFiles(context.em, this.storage, context.workspaceId, result.file, result.body);
    if (
      await replaceImageFile(context.em, this.storage, context.workspaceId, current, result.file, {
        markChecked: false,
        first,
      })
    )
      state.blurred += 1;
    // The image changed meanwhile (another blur got there first): the file made for it is not used.
    else await releaseImageBlobs(context.em, this.storage, context.workspaceId, [result.file]);
  }

  /** The files a finished preview made, by image. */
  private async preparedBy(em: EntityManager, previewJobId: string): Promise<PreviewImage[]> {
    return (await readProgress<BlurProgress>(em, previewJobId)).previews ?? [];
  }
}
