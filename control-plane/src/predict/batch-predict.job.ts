import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import { BillingService } from '../billing/billing.service.ts';
import { changeDelta, applyDelta, lockDataset } from '../datasets/dataset-counters.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { VersionService } from '../datasets/version.service.ts';
import { BatchBlurJob } from '../faces/batch-blur.ts';
import type { FaceDetector } from '../faces/face-detector.ts';
import { HttpError } from '../http/errors.ts';
import { checkLabels, labelsOf, replaceLabels } from '../images/image-labels.ts';
import {
  annotateTargetsAfter,
  countAnnotateTargetsAfter,
  imageToLabel,
  type AnnotateTargetRow,
} from '../images/image.store.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import { Model } from '../models/model.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { annotateImage, annotationOf, type Annotation } from './auto-annotate.ts';
import {
  readProgress,
  writeProgress,
  type BatchPredictPayload,
  type BatchProgress,
  type BatchRunPayload,
} from './batch-predict.store.ts';
import type { PredictedLabels } from './prediction-labels.ts';
import type { Predictor } from './predictor.ts';

type TargetRow = AnnotateTargetRow;

/** Image ids read per query while walking the targets. */
const TARGETS_PER_READ = 200;

/**
 * Charges a run for the images it processed, once (the ledger keeps one charge per job); nothing for none. Face blur
 * runs are free: they run on the control plane's CPU, like blurring on ingest.
 */
export async function chargeRun(
  em: EntityManager,
  config: AppConfig,
  run: { id: string; workspaceId: string; payload: BatchRunPayload; processed: number },
): Promise<void> {
  if (run.payload.operation === 'blur') return;
  await new BillingService(em, config).chargeUsage({
    workspaceId: run.workspaceId,
    jobId: run.id,
    units: run.processed,
    centsPerUnit: run.payload.centsPerImage,
    description: `Auto-annotation with ${run.payload.modelRef}: ${run.processed} image${run.processed === 1 ? '' : 's'}`,
    metadata: { kind: 'batch-predict', datasetId: run.payload.datasetId, modelId: run.payload.modelId },
  });
}

/**
 * Batch auto-annotation, a control-plane job: saves a dataset version (the state to go back to), then runs the model
 * on each target image in id order and appends its predictions to the image's labels, one transaction per image that
 * also records the run's state (BatchProgress). Labels already there are never changed or removed. A cancel aborts the
 * inference in hand and nothing more is saved; a run is charged for the images it processed, when it ends whichever
 * way (or, after its process died, when its summary is dismissed). A run of operation blur is BatchBlurJob's.
 */
export class BatchPredictJob implements JobHandler {
  private readonly storage: Storage;
  private readonly predictor: Predictor;
  private readonly config: AppConfig;
  private readonly blur: BatchBlurJob;

  constructor(storage: Storage, predictor: Predictor, config: AppConfig, faces: FaceDetector) {
    this.storage = storage;
    this.predictor = predictor;
    this.config = config;
    this.blur = new BatchBlurJob(storage, faces);
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    if ((context.payload as unknown as BatchRunPayload).operation === 'blur') return this.blur.run(context);
    const payload = context.payload as unknown as BatchPredictPayload;
    const { em } = context;
    const dataset = await em.findOne(Dataset, { id: payload.datasetId, deletedAt: null }, { populate: ['workspace'] });
    if (!dataset) throw new JobFailure('The dataset was deleted');
    const model = await em.findOne(Model, { id: payload.modelId, deletedAt: null });
    if (!model) throw new JobFailure(`The model ${payload.modelRef} was deleted`);

    const saved = await readProgress(em, context.id);
    const state: BatchProgress = {
      stage: 'labeling',
      percent: 0,
      processed: saved.processed ?? 0,
      total: saved.total ?? payload.total,
      annotations: saved.annotations ?? 0,
      classIds: saved.classIds ?? [],
      lastImageId: saved.lastImageId ?? null,
      datasetVersion: saved.datasetVersion ?? null,
      skipped: saved.skipped ?? 0,
    };
    if (state.datasetVersion === null) {
      const { version } = await new VersionService(em, this.storage).save(dataset.id, undefined);
      state.datasetVersion = version.version;
      state.total = state.processed + (await this.countTargets(em, payload, state.lastImageId));
      await writeProgress(em, context.id, state);
    }
    // The state is written by this handler alone, with each image's labels (writeProgress): context.progress, whose
    // writes trail behind, gets only the final state, which the runner keeps as the completed job's progress.

    const request = {
      modelId: payload.modelRef,
      confidence: payload.confidence,
      iou: payload.iou,
      classMapping: payload.classMapping,
    };
    const annotation = annotationOf(model, dataset, request, payload.classMap);
    for (;;) {
      const targets = await this.targets(em, payload, state.lastImageId);
      if (targets.length === 0) break;
      for (const image of targets) {
        context.signal.throwIfAborted();
        const predicted = await this.predict(context, annotation, { ...image, workspaceId: dataset.workspace.id });
        await this.save(context, payload, image, predicted, state);
      }
    }
    context.progress({ ...state, stage: 'done', percent: 100 });
    await chargeRun(em, this.config, {
      id: context.id,
      workspaceId: context.workspaceId,
      payload,
      processed: state.processed,
    });
    return {
      processed: state.processed,
      annotations: state.annotations,
      classes: state.classIds.length,
      skipped: state.skipped,
      datasetVersion: state.datasetVersion,
    };
  }

  /** A cancelled or failed run is charged for what it processed. */
  async discard(context: JobContext): Promise<void> {
    if ((context.payload as unknown as BatchRunPayload).operation === 'blur') return this.blur.discard(context);
    const { processed = 0 } = await readProgress(context.em, context.id);
    await chargeRun(context.em, this.config, {
      id: context.id,
      workspaceId: context.workspaceId,
      payload: context.payload as unknown as BatchPredictPayload,
      processed,
    });
  }

  /** The images still to do: decoded ones after `after` in id order, and, unless includeAnnotated, only unlabeled ones. */
  private targets(em: EntityManager, payload: BatchPredictPayload, after: string | null): Promise<TargetRow[]> {
    return annotateTargetsAfter(em, payload.datasetId, payload.includeAnnotated, after ?? '', TARGETS_PER_READ);
  }

  private async countTargets(em: EntityManager, payload: BatchPredictPayload, after: string | null): Promise<number> {
    return countAnnotateTargetsAfter(em, payload.datasetId, payload.includeAnnotated, after ?? '');
  }

  /** The model on one image, abandoned the moment the run is cancelled. Null when the image cannot be read (skipped). */
  private async predict(
    context: JobContext,
    annotation: Annotation,
    image: TargetRow & { workspaceId: string },
  ): Promise<PredictedLabels | null> {
    let stop = () => {};
    const aborted = new Promise<never>((_, reject) => {
      stop = () =>
        reject(
          context.signal.reason instanceof Error ? context.signal.reason : new Error(String(context.signal.reason)),
        );
      if (context.signal.aborted) stop();
      else context.signal.addEventListener('abort', stop, { once: true });
    });
    try {
      return await Promise.race([annotateImage(context.em, this.predictor, this.storage, annotation, image), aborted]);
    } catch (error) {
      if (context.signal.aborted) throw error;
      // The image's own problem (undecodable, too large to decode, too many channels, file gone): it is skipped, uncharged.
      if (error instanceof HttpError && [400, 404, 409, 413].includes(error.status)) {
        context.log.warn({ imageId: image.id, err: error }, 'auto-annotation skipped an image');
        return null;
      }
      // The model's problem (class mismatch found in its export, no export): the run cannot go on.
      if (error instanceof HttpError) throw new JobFailure(error.message);
      throw error;
    } finally {
      context.signal.removeEventListener('abort', stop);
    }
  }

  /**
   * Appends the predictions to the image's labels under the dataset lock, with the counters and the run's state, in one
   * transaction that first confirms the run still holds the job (a cancel wins over it). An image that got labels
   * meanwhile is left alone unless includeAnnotated; one deleted meanwhile is passed over.
   */
  private async save(
    context: JobContext,
    payload: BatchPredictPayload,
    image: TargetRow,
    predicted: PredictedLabels | null,
    state: BatchProgress,
  ): Promise<void> {
    await context.em.transactional(async (tx) => {
      await context.confirmHeld(tx);
      state.lastImageId = image.id;
      if (predicted === null) {
        state.skipped += 1;
        return writeProgress(tx, context.id, state);
      }
      await lockDataset(tx, payload.datasetId);
      const now = await imageToLabel(tx, image.id, payload.datasetId);
      if (!now || (!payload.includeAnnotated && now.label_count > 0)) return writeProgress(tx, context.id, state);
      state.processed += 1;
      if (predicted.labels.length > 0) {
        const dataset = await tx.findOneOrFail(Dataset, payload.datasetId, { refresh: true });
        const existing = (await labelsOf(tx, [image.id])).get(image.id) ?? [];
        try {
          const checked = checkLabels(dataset, [...existing, ...predicted.labels]);
          await replaceLabels(tx, dataset.id, [{ imageId: image.id, ...checked }]);
          const before = { split: now.split, labelCount: now.label_count, hasError: now.error !== null };
          await applyDelta(tx, dataset.id, changeDelta([before], [{ ...before, labelCount: checked.labels.length }]));
          state.annotations += predicted.labels.length;
          state.classIds = [...new Set([...state.classIds, ...predicted.labels.map((label) => label.classId)])].sort(
            (a, b) => a - b,
          );
        } catch (error) {
          if (!(error instanceof HttpError)) throw error;
          context.log.warn({ imageId: image.id, err: error }, 'auto-annotation could not save the labels of an image');
          state.skipped += 1;
        }
      }
      state.percent = state.total ? Math.min(99, Math.floor((state.processed * 100) / state.total)) : 0;
      await writeProgress(tx, context.id, state);
    });
  }
}
