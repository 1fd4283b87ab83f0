import type { EntityManager } from '@mikro-orm/postgresql';
import { isBlurFacesOn } from '../datasets/dataset.store.ts';
import { storeImageFiles } from '../images/image-intake.ts';
import { countUncheckedForFaces, uncheckedForFacesAfter } from '../images/image.store.ts';
import { enqueueJob } from '../jobs/job-queue.ts';
import { activeJobId } from '../jobs/job.store.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import type { Storage } from '../storage/storage.ts';
import { blurStoredImage, replaceImageFile, type StoredImageRow } from './face-blur-stored.ts';
import { FaceDetectorMissing, type FaceDetector } from './face-detector.ts';

/** The job kind that blurs the faces of a dataset's images not yet checked (blurFaces turned on). */
export const FACE_BLUR_JOB = 'face-blur';
const BATCH = 50;
/** Names of unchecked images kept on the job's result; the count covers all. */
const MAX_REPORTED = 100;

/**
 * Queues the dataset's face blur unless one is queued or running (which takes every image not yet checked, however
 * they came). The caller holds the dataset's lock, so two callers never both queue one. Returns the job's id.
 */
export async function queueFaceBlur(em: EntityManager, dataset: { id: string; workspaceId: string }): Promise<string> {
  const active = await activeJobId(em, dataset.id, FACE_BLUR_JOB);
  if (active) return active.id;
  const job = await enqueueJob(em, {
    kind: FACE_BLUR_JOB,
    workspaceId: dataset.workspaceId,
    subjectId: dataset.id,
    payload: { datasetId: dataset.id },
    exclusive: true,
  });
  return job.id;
}

/**
 * Blurs faces in place: an image with faces gets new bytes and thumbnail (a new hash) and its old bytes are deleted
 * when nothing else in the workspace uses them (another dataset's copy, a saved version); the originals are not kept.
 * Stops when blurFaces is turned off or the dataset deleted. Safe to run again: it takes only unchecked images.
 */
export class FaceBlurJob implements JobHandler {
  private readonly storage: Storage;
  private readonly detector: FaceDetector;

  constructor(storage: Storage, detector: FaceDetector) {
    this.storage = storage;
    this.detector = detector;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const { em, workspaceId } = context;
    const { datasetId } = context.payload as { datasetId: string };
    try {
      this.detector.requireModel();
    } catch (error) {
      if (error instanceof FaceDetectorMissing) throw new JobFailure(error.message);
      throw error;
    }
    const total = await countUncheckedForFaces(em, datasetId);
    const outcome = {
      imagesChecked: 0,
      imagesBlurred: 0,
      imagesUnchecked: 0,
      unchecked: [] as string[],
      stopped: false,
    };
    const unchecked = (image: StoredImageRow, reason: string) => {
      outcome.imagesUnchecked += 1;
      if (outcome.unchecked.length < MAX_REPORTED) outcome.unchecked.push(`${image.name}: ${reason}`);
    };
    let after = '';
    for (;;) {
      context.signal.throwIfAborted();
      if (!(await isBlurFacesOn(em, datasetId))) {
        outcome.stopped = true;
        break;
      }
      const batch = await uncheckedForFacesAfter(em, datasetId, after, BATCH);
      if (batch.length === 0) break;
      for (const image of batch) {
        after = image.id;
        const reason = await this.blur(em, workspaceId, image, outcome);
        if (reason) unchecked(image, reason);
        else outcome.imagesChecked += 1;
        context.progress({
          stage: 'blurring',
          percent: Math.min(
            99,
            Math.floor((100 * (outcome.imagesChecked + outcome.imagesUnchecked)) / Math.max(total, 1)),
          ),
          processed: outcome.imagesChecked + outcome.imagesUnchecked,
          total,
        });
      }
    }
    return outcome;
  }

  /** Checks one image and blurs its faces; returns why it could not be checked, if so. */
  private async blur(
    em: EntityManager,
    workspaceId: string,
    image: StoredImageRow,
    outcome: { imagesBlurred: number },
  ): Promise<string | undefined> {
    const result = await blurStoredImage(this.storage, this.detector, workspaceId, image);
    if ('skip' in result) return result.skip;
    const { file } = result;
    if (file.hash !== image.hash) await storeImageFiles(em, this.storage, workspaceId, file, result.body);
    const changed = await replaceImageFile(em, this.storage, workspaceId, image, file, { markChecked: true });
    if (changed && file.hash !== image.hash) outcome.imagesBlurred += 1;
    return undefined;
  }
}
