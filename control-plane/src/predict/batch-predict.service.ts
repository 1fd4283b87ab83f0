import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { BillingService } from '../billing/billing.service.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import { query } from '../db/sql.ts';
import { Conflict, HttpError, Invalid, NotFound } from '../http/errors.ts';
import { INGEST_JOB } from '../ingest/ingest-payload.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { ActiveJobExists, enqueueJob } from '../jobs/job-queue.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { annotateImage, prepareAnnotation, type Annotation } from './auto-annotate.ts';
import type { Predictor } from './predictor.ts';
import { chargeRun } from './batch-predict.job.ts';
import type { BatchDeleted, BatchPredictQueued, BatchPredictRequest, BatchStatus } from './batch-predict.schemas.ts';
import { activeRun, BATCH_PREDICT_JOB, dismissRun, undismissedRuns, type BatchPredictPayload, type BatchRunRow } from './batch-predict.store.ts';
import { requireProcessing } from '../datasets/connected-storage.ts';

const RUN_IN_PROGRESS = 'An auto-annotation run is already in progress on this dataset; wait for it or cancel it (DELETE on the same path)';

/** Batch auto-annotation of a dataset: admission (checks, credit), the run's status, cancel and dismissal. The work is BatchPredictJob's. */
export class BatchPredictService {
  private readonly em: EntityManager;
  private readonly config: AppConfig;
  private readonly lifecycle: JobLifecycle;
  private readonly storage: Storage;
  private readonly predictor: Predictor;

  constructor(em: EntityManager, deps: { config: AppConfig; lifecycle: JobLifecycle; storage: Storage; predictor: Predictor }) {
    this.em = em;
    this.config = deps.config;
    this.lifecycle = deps.lifecycle;
    this.storage = deps.storage;
    this.predictor = deps.predictor;
  }

  /**
   * Checks (blur 400, dataset not ready or a run in progress 409, no classes 422, the model and classes as single-image
   * auto-annotation, no images left 409, credit 402), then queues the run. The class map goes
   * with the run (the job re-checks it against the dataset's classes as they are then, through the label checks).
   */
  async start(actor: Actor, owner: string, slug: string, body: BatchPredictRequest): Promise<z.input<typeof BatchPredictQueued>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    await requireProcessing(this.em, dataset, 'Batch labeling');
    if (body.operation === 'blur') throw Invalid('operation blur: face blurring is not available on this appliance yet; auto-annotation (operation annotate, the default) is');
    const [busy] = await query(this.em, `select 1 from jobs where kind = ? and subject_id = ? and status in ('queued', 'running') limit 1`, [INGEST_JOB, dataset.id]);
    if (dataset.status !== 'ready' || busy) throw Conflict(`The dataset is not ready (${busy ? 'an ingest is running' : dataset.status}); try again when it is`);
    if (await activeRun(this.em, dataset.id)) throw Conflict(RUN_IN_PROGRESS);
    if (dataset.task !== 'depth' && dataset.classNames.length === 0) throw new HttpError(422, 'The dataset has no classes: add the classes to label with first');
    const annotation = await prepareAnnotation(this.em, actor, dataset, body);
    const [{ n: total }] = await query<{ n: number }>(
      this.em,
      'select count(*)::int as n from images where dataset_id = ? and error is null and (? or label_count = 0)',
      [dataset.id, body.includeAnnotated],
    );
    if (total === 0) throw Conflict(body.includeAnnotated ? 'No images left to label: the dataset has no usable images' : 'No images left to label: every image has labels (includeAnnotated runs on labeled images too)');
    // A model that recorded no class names has them in its export only: one image through it checks the classes now.
    if (annotation.classMap === null) await this.probe(annotation, dataset, body.includeAnnotated);
    const centsPerImage = this.config.batchPredictCentsPerImage;
    await new BillingService(this.em, this.config).requireCredit(dataset.workspace.id, Math.ceil(total * centsPerImage));
    // A new run replaces the summary of the last: those runs are settled and dismissed.
    for (const run of await undismissedRuns(this.em, dataset.id)) await this.settleAndDismiss(dataset.workspace.id, run);
    const payload: BatchPredictPayload = {
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
    try {
      const job = await this.em.transactional((em) =>
        enqueueJob(em, { kind: BATCH_PREDICT_JOB, workspaceId: dataset.workspace.id, subjectId: dataset.id, payload: { ...payload }, exclusive: true }),
      );
      return { jobId: job.id };
    } catch (error) {
      if (error instanceof ActiveJobExists) throw Conflict(RUN_IN_PROGRESS);
      throw error;
    }
  }

  /** Runs the model on the first image the run would label, for the class checks (400, 422) and the export (503) before admission. */
  private async probe(annotation: Annotation, dataset: Dataset, includeAnnotated: boolean): Promise<void> {
    const [image] = await query<{ id: string; hash: string; ext: string; channels: number; referenceKey: string | null }>(
      this.em,
      'select id, hash, ext, channels, reference_key as "referenceKey" from images where dataset_id = ? and error is null and (? or label_count = 0) and channels <= 3 order by id limit 1',
      [dataset.id, includeAnnotated],
    );
    if (image) await annotateImage(this.em, this.predictor, this.storage, annotation, { ...image, workspaceId: dataset.workspace.id });
  }

  async status(actor: Actor, owner: string, slug: string): Promise<z.input<typeof BatchStatus>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const [active, [last]] = await Promise.all([activeRun(this.em, dataset.id), undismissedRuns(this.em, dataset.id)]);
    return { activeJob: active ? activeView(active) : null, lastRun: last ? finishedView(last) : null };
  }

  /** Cancels the run in flight (it stops after the image in hand), else settles and dismisses the last summary. */
  async stop(actor: Actor, owner: string, slug: string, previewJobId: string | undefined): Promise<z.input<typeof BatchDeleted>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    if (previewJobId) throw NotFound(`Blur preview ${previewJobId} not found (face blurring is not available on this appliance yet)`);
    const active = await activeRun(this.em, dataset.id);
    if (active && (await this.lifecycle.requestCancel(this.em, active.id))) return { action: 'cancelled', jobId: active.id };
    const [last] = await undismissedRuns(this.em, dataset.id);
    if (!last) return { action: 'none', jobId: null };
    await this.settleAndDismiss(dataset.workspace.id, last);
    return { action: 'dismissed', jobId: last.id };
  }

  /** Charges the run if its end did not (its process died), then hides its summary. */
  private async settleAndDismiss(workspaceId: string, run: BatchRunRow): Promise<void> {
    await chargeRun(this.em, this.config, { id: run.id, workspaceId, payload: run.payload, processed: run.progress?.processed ?? 0 });
    await dismissRun(this.em, run.id);
  }
}

function settingsOf(run: BatchRunRow) {
  return {
    id: run.id,
    modelId: run.payload.modelRef,
    confidence: run.payload.confidence,
    iou: run.payload.iou,
    includeAnnotated: run.payload.includeAnnotated,
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

function finishedView(run: BatchRunRow): NonNullable<z.input<typeof BatchStatus>['lastRun']> {
  const progress = run.progress ?? {};
  return {
    ...settingsOf(run),
    failed: run.status === 'failed',
    stopped: run.status === 'cancelled',
    error: run.status === 'completed' ? null : run.error,
    results: {
      processed: progress.processed ?? 0,
      annotations: progress.annotations ?? 0,
      classes: progress.classIds?.length ?? 0,
      total: progress.total ?? run.payload.total,
      chargedCents: run.charged_cents === null ? null : Number(run.charged_cents),
    },
  };
}
