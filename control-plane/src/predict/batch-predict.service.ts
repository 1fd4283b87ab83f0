import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { BillingService } from '../billing/billing.service.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import { Conflict, HttpError, NotFound, Unavailable } from '../http/errors.ts';
import { INGEST_JOB } from '../ingest/ingest-payload.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { ActiveJobExists, enqueueJob } from '../jobs/job-queue.ts';
import { hasActiveJob } from '../jobs/job.store.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { checkPreviewToApply, previewOf, previewsOf } from '../faces/batch-blur-preview.ts';
import { countBlurTargets, PREVIEW_IMAGES } from '../faces/batch-blur.ts';
import { FaceDetector, FaceDetectorMissing } from '../faces/face-detector.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { countAnnotateTargets, firstAnnotateTargets, imageErrorAndReference } from '../images/image.store.ts';
import { ImageUrls } from '../images/image-urls.ts';
import { annotateImage, prepareAnnotation, type Annotation } from './auto-annotate.ts';
import type { Predictor } from './predictor.ts';
import { chargeRun } from './batch-predict.job.ts';
import type { BatchDeleted, BatchPredictQueued, BatchPredictRequest, BatchStatus } from './batch-predict.schemas.ts';
import {
  activeRun,
  BATCH_PREDICT_JOB,
  dismissRun,
  markPreviewApplied,
  markPreviewDiscarded,
  undismissedRuns,
  type BatchBlurPayload,
  type BatchPredictPayload,
  type BatchRunRow,
} from './batch-predict.store.ts';
import { requireProcessing } from '../datasets/connected-storage.ts';

const RUN_IN_PROGRESS =
  'An auto-annotation or face blur run is already in progress on this dataset; wait for it or cancel it (DELETE on the same path)';
/** Images the admission probe tries before it gives up finding one small enough to predict on (the run then checks as it goes). */
const PROBED_IMAGES = 8;

type BlurRequest = Extract<BatchPredictRequest, { operation: 'blur' }>;
type AnnotateRequest = Exclude<BatchPredictRequest, BlurRequest>;

/**
 * Batch auto-annotation and face blur of a dataset: admission (checks, credit), the run's status, cancel and dismissal,
 * discarding a blur preview. The work is BatchPredictJob's (BatchBlurJob's for blur).
 */
export class BatchPredictService {
  private readonly em: EntityManager;
  private readonly config: AppConfig;
  private readonly lifecycle: JobLifecycle;
  private readonly storage: Storage;
  private readonly predictor: Predictor;

  constructor(
    em: EntityManager,
    deps: { config: AppConfig; lifecycle: JobLifecycle; storage: Storage; predictor: Predictor },
  ) {
    this.em = em;
    this.config = deps.config;
    this.lifecycle = deps.lifecycle;
    this.storage = deps.storage;
    this.predictor = deps.predictor;
  }

  /**
   * Checks (dataset not ready or a run in progress 409), then starts a face blur (startBlur) or an auto-annotation run.
   */
  async start(
    actor: Actor,
    owner: string,
    slug: string,
    body: BatchPredictRequest,
  ): Promise<z.input<typeof BatchPredictQueued>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    await requireProcessing(this.em, dataset, 'Batch labeling');
    const busy = await hasActiveJob(this.em, INGEST_JOB, dataset.id);
    if (dataset.status !== 'ready' || busy)
      throw Conflict(
        `The dataset is not ready (${busy ? 'an ingest is running' : dataset.status}); try again when it is`,
      );
    if (await activeRun(this.em, dataset.id)) throw Conflict(RUN_IN_PROGRESS);
    return body.operation === 'blur' ? this.startBlur(dataset, body) : this.startAnnotate(actor, dataset, body);
  }

  /**
   * Auto-annotation: checks (no classes 422, the model and classes as single-image auto-annotation, no images left 409,
   * credit 402), then queues the run. The class map goes with the run (the job re-checks it against the dataset's
   * classes as they are then, through the label checks).
   */
  private async startAnnotate(
    actor: Actor,
    dataset: Dataset,
    body: AnnotateRequest,
  ): Promise<z.input<typeof BatchPredictQueued>> {
    if (dataset.task !== 'depth' && dataset.classNames.length === 0)
      throw new HttpError(422, 'The dataset has no classes: add the classes to label with first');
    const annotation = await prepareAnnotation(this.em, actor, dataset, body);
    const total = await countAnnotateTargets(this.em, dataset.id, body.includeAnnotated);
    if (total === 0)
      throw Conflict(
        body.includeAnnotated
          ? 'No images left to label: the dataset has no usable images'
          : 'No images left to label: every image has labels (includeAnnotated runs on labeled images too)',
      );
    // A model that recorded no class names has them in its export only: one image through it checks the classes now.
    if (annotation.classMap === null) await this.probe(annotation, dataset, body.includeAnnotated);
    const centsPerImage = this.config.batchPredictCentsPerImage;
    await new BillingService(this.em, this.config).requireCredit(
      dataset.workspace.id,
      Math.ceil(total * centsPerImage),
    );
    // A new run replaces the summary of the last: those runs are settled and dismissed.
    for (const run of await undismissedRuns(this.em, dataset.id))
      await this.settleAndDismiss(dataset.workspace.id, run);
    const payload: BatchPredictPayload = {
      operation: 'annotate',
      datasetId: dataset.id,
      modelId: annotation.model.id,
      modelRef: body.modelId,
      confidence: body.confidence,
      iou: body.iou,
      includeAnnotated: body.includeAnnotated,
      classMapping: body.classMapping ?? null,
      classMap: annotation.classMap,
      centsPerImage,
      total,
    };
    return this.enqueue(dataset, { ...payload });
  }

  /**
   * Face blur: checks (hosted storage 409, the detector 503, the image 404, the preview to apply: 404, 409 unfinished,
   * applied or discarded, 400 other settings; no images 409), then queues the run (free: no credit needed).
   */
  private async startBlur(dataset: Dataset, body: BlurRequest): Promise<z.input<typeof BatchPredictQueued>> {
    if (dataset.reference)
      throw Conflict('Faces are blurred in stored images only: this dataset is read in place from connected storage');
    try {
      new FaceDetector(this.config.faceDetectorPath).requireModel();
    } catch (error) {
      if (error instanceof FaceDetectorMissing) throw Unavailable(error.message);
      throw error;
    }
    const imageId = body.imageId ?? null;
    if (imageId) {
      const image = await imageErrorAndReference(this.em, imageId, dataset.id);
      if (!image) throw NotFound(`Image ${imageId} not found in this dataset`);
      if (image.error || image.referenceKey)
        throw Conflict(
          `Image ${imageId} cannot be blurred: ${image.error ? `it could not be decoded (${image.error})` : 'it is read in place from connected storage'}`,
        );
    }
    if (body.previewJobId)
      await checkPreviewToApply(this.em, dataset.id, body.previewJobId, {
        confidence: body.confidence,
        boxScale: body.boxScale,
        imageId,
      });
    const count = await countBlurTargets(this.em, dataset.id, imageId);
    if (count === 0) throw Conflict('No images to blur: the dataset has no stored, decodable images');
    for (const run of await undismissedRuns(this.em, dataset.id))
      await this.settleAndDismiss(dataset.workspace.id, run);
    const payload: BatchBlurPayload = {
      operation: 'blur',
      datasetId: dataset.id,
      confidence: body.confidence,
      boxScale: body.boxScale,
      imageId,
      preview: body.preview,
      previewJobId: body.previewJobId ?? null,
      total: body.preview ? Math.min(count, PREVIEW_IMAGES) : count,
    };
    return this.enqueue(dataset, { ...payload }, payload.previewJobId);
  }

  /** Queues the run (marking the preview it applies as applied, in the same transaction: 409 if another run did first). */
  private async enqueue(
    dataset: Dataset,
    payload: Record<string, unknown>,
    appliesPreview: string | null = null,
  ): Promise<z.input<typeof BatchPredictQueued>> {
    try {
      const job = await this.em.transactional(async (em) => {
        const queued = await enqueueJob(em, {
          kind: BATCH_PREDICT_JOB,
          workspaceId: dataset.workspace.id,
          subjectId: dataset.id,
          payload,
          exclusive: true,
        });
        if (appliesPreview && !(await markPreviewApplied(em, appliesPreview, queued.id)))
          throw Conflict(`Preview ${appliesPreview} was applied or discarded meanwhile; start a new preview`);
        return queued;
      });
      return { jobId: job.id };
    } catch (error) {
      if (error instanceof ActiveJobExists) throw Conflict(RUN_IN_PROGRESS);
      throw error;
    }
  }

  /**
   * Runs the model on the first image the run would label, for the class checks (400, 422) and the export (503) before
   * admission. An image too large to decode for predict (413) is passed over, as the run skips it: the next one is tried.
   */
  private async probe(annotation: Annotation, dataset: Dataset, includeAnnotated: boolean): Promise<void> {
    const images = await firstAnnotateTargets(this.em, dataset.id, includeAnnotated, PROBED_IMAGES);
    for (const image of images) {
      try {
        await annotateImage(this.em, this.predictor, this.storage, annotation, {
          ...image,
          workspaceId: dataset.workspace.id,
        });
        return;
      } catch (error) {
        if (!(error instanceof HttpError && error.status === 413)) throw error;
      }
    }
  }

  async status(actor: Actor, owner: string, slug: string): Promise<z.input<typeof BatchStatus>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const [active, [last]] = await Promise.all([activeRun(this.em, dataset.id), undismissedRuns(this.em, dataset.id)]);
    const urls = new ImageUrls(this.storage.urls);
    return {
      activeJob: active ? { ...activeView(active), ...(await previewsOf(urls, dataset.workspace.id, active)) } : null,
      lastRun: last ? finishedView(last, await previewsOf(urls, dataset.workspace.id, last)) : null,
    };
  }

  /**
   * Cancels the run in flight (it stops after the image in hand), else settles and dismisses the last summary. With
   * previewJobId: discards that face blur preview (cancelled if running; its prepared images deleted).
   */
  async stop(
    actor: Actor,
    owner: string,
    slug: string,
    previewJobId: string | undefined,
  ): Promise<z.input<typeof BatchDeleted>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    if (previewJobId) return this.discardPreview(dataset, previewJobId);
    const active = await activeRun(this.em, dataset.id);
    if (active && (await this.lifecycle.requestCancel(this.em, active.id)))
      return { action: 'cancelled', jobId: active.id };
    const [last] = await undismissedRuns(this.em, dataset.id);
    if (!last) return { action: 'none', jobId: null };
    await this.settleAndDismiss(dataset.workspace.id, last);
    return { action: 'dismissed', jobId: last.id };
  }

  /** A preview in flight is cancelled (its job deletes what it prepared); a finished one's prepared images are deleted. */
  private async discardPreview(dataset: Dataset, previewJobId: string): Promise<z.input<typeof BatchDeleted>> {
    const preview = await previewOf(this.em, dataset.id, previewJobId);
    if (preview.result?.appliedBy)
      throw Conflict(
        `Preview ${previewJobId} was applied (run ${preview.result.appliedBy}); there is nothing to discard`,
      );
    if (preview.result?.discarded) return { action: 'none', jobId: null };
    if (await this.lifecycle.requestCancel(this.em, preview.id)) return { action: 'cancelled', jobId: preview.id };
    if (!(await markPreviewDiscarded(this.em, preview.id)))
      throw Conflict(`Preview ${previewJobId} was applied meanwhile; there is nothing to discard`);
    const files = (preview.progress?.previews ?? []).flatMap((image) => (image.blurred ? [image.blurred] : []));
    await releaseImageBlobs(this.em, this.storage, dataset.workspace.id, files);
    return { action: 'dismissed', jobId: preview.id };
  }

  /** Charges the run if its end did not (its process died), then hides its summary. */
  private async settleAndDismiss(workspaceId: string, run: BatchRunRow): Promise<void> {
    await chargeRun(this.em, this.config, {
      id: run.id,
      workspaceId,
      payload: run.payload,
      processed: run.progress?.processed ?? 0,
    });
    await dismissRun(this.em, run.id);
  }
}

function settingsOf(run: BatchRunRow) {
  const { payload } = run;
  if (payload.operation === 'blur') {
    return {
      id: run.id,
      operation: 'blur' as const,
      preview: payload.preview,
      confidence: payload.confidence,
      boxScale: payload.boxScale,
      ...(payload.imageId && { imageId: payload.imageId }),
      datasetVersion: null,
    };
  }
  return {
    id: run.id,
    modelId: payload.modelRef,
    confidence: payload.confidence,
    iou: payload.iou,
    includeAnnotated: payload.includeAnnotated,
    boxScale: 1,
    datasetVersion: run.progress?.datasetVersion ?? null,
  };
}

function activeView(run: BatchRunRow): NonNullable<z.input<typeof BatchStatus>['activeJob']> {
  return {
    ...settingsOf(run),
    stopping: run.cancel_requested,
    progress: { processed: run.progress?.processed ?? 0, total: run.progress?.total ?? run.payload.total },
    startedAt: new Date(run.started_at ?? run.created_at).toISOString(),
  };
}

function finishedView(
  run: BatchRunRow,
  previews: Awaited<ReturnType<typeof previewsOf>>,
): NonNullable<z.input<typeof BatchStatus>['lastRun']> {
  const progress = run.progress ?? {};
  return {
    ...settingsOf(run),
    failed: run.status === 'failed',
    stopped: run.status === 'cancelled',
    error: run.status === 'completed' ? null : run.error,
    results: {
      processed: progress.processed ?? 0,
      ...(run.payload.operation === 'blur' && { faces: progress.faces ?? 0 }),
      ...previews,
      annotations: progress.annotations ?? 0,
      classes: progress.classIds?.length ?? 0,
      total: progress.total ?? run.payload.total,
      chargedCents: run.charged_cents === null ? null : Number(run.charged_cents),
    },
  };
}
