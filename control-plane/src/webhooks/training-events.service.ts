import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requireKey } from '../auth/access.ts';
import type { Actor, KeyActor } from '../auth/actor.ts';
import { cancelRequested, recordTrainingProgress } from '../jobs/job.store.ts';
import { NotFound } from '../http/errors.ts';
import type { Model } from '../models/model.entity.ts';
import { endReportedRun, endRun } from '../training/run-status.ts';
import { epochHistory, trainResults } from '../training/epoch-history.ts';
import { TrainingRun } from '../training/training-run.entity.ts';
import { recordConsoleChunk, recordEpoch } from '../training/training-run.store.ts';
import type { WeightsArrived } from '../predict/weights-arrived.ts';
import type { UploadService } from '../uploads/upload.service.ts';
import { headlineMetrics, numberOrNull } from './final-metrics.ts';
import { modelFor, modelForNewRun } from './run-identity.ts';
import type { MetricsAnswer, MetricsEnvelope } from './webhook.schemas.ts';

type Envelope = z.output<typeof MetricsEnvelope>;
type Answer = z.input<typeof MetricsAnswer>;
type Data = Record<string, unknown>;

const record = (value: unknown): Data =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Data) : {};
/** A reported field as text: a string as is, a number or boolean written out, anything else `fallback`. */
const text = (value: unknown, fallback: string): string =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : fallback;
/** A validation row as the trainer sends it ([hash, tp, fp, fn]), kept as an object. */
const analysisRow = ([image, tp, fp, fn]: unknown[]) => ({ image, tp, fp, fn });
const int = (value: unknown): number | null => (typeof value === 'number' && Number.isInteger(value) ? value : null);
const received = (key: KeyActor, envelope: Envelope) =>
  ({ received: true, event: envelope.event, mode: key.jobScope ? 'cloud' : 'remote' }) as const;
/** At most this many per-image validation rows are kept (the client sends up to 5,000). */
const MAX_ANALYSIS_ROWS = 5000;

/**
 * POST /api/webhooks/training/metrics: what a `yolo train` process reports, from a worker host (job key) or a
 * user's own machine (their key). Events land on the run and the model; every answer carries `cancelled`, which
 * is how a user's cancel reaches the trainer.
 */
export class TrainingEventsService {
  private readonly em: EntityManager;
  private readonly uploads: UploadService;
  private readonly publicBaseUrl: string;
  private readonly weightsArrived: WeightsArrived | undefined;

  /**
   * `weightsArrived`: told when a user's own machine reported training_complete (its automatic ONNX export is queued).
   * A host job's export is queued by its end instead (`TrainingJob.ended`), once the trainer has left the host's cores.
   */
  constructor(em: EntityManager, uploads: UploadService, publicBaseUrl: string, weightsArrived?: WeightsArrived) {
    this.em = em;
    this.uploads = uploads;
    this.publicBaseUrl = publicBaseUrl;
    this.weightsArrived = weightsArrived;
  }

  async receive(actor: Actor, envelope: Envelope): Promise<Answer> {
    const key = requireKey(actor);
    const answer = await this.em.transactional(async (em) => {
      if (envelope.event === 'training_started') return this.started(em, key, envelope);
      const model = await modelFor(em, key, envelope);
      const run = await this.currentRun(em, model, int(envelope.data.runId));
      // Any event shows the trainer alive: the silence sweep measures from here.
      run.lastReportAt = new Date();
      await this.apply(em, envelope, model, run);
      await em.flush();
      return { ...received(key, envelope), modelId: model.id, runId: run.id, cancelled: await this.cancelled(em, run) };
    });
    if (envelope.event === 'training_complete' && answer.modelId && !key.jobScope)
      await this.weightsArrived?.([answer.modelId]);
    return answer;
  }

  private async started(em: EntityManager, key: KeyActor, envelope: Envelope): Promise<Answer> {
    const model = await modelForNewRun(em, key, envelope);
    const data = envelope.data;
    const run = em.create(TrainingRun, {
      workspace: key.workspaceId,
      model,
      job: key.jobScope?.jobId ?? null,
      epochs: int(data.epochs),
      device: typeof data.device === 'string' ? data.device.slice(0, 128) : null,
      trainArgs: record(data.trainArgs),
      environment: record(data.environment),
    });
    Object.assign(model, {
      status: 'training',
      startedAt: new Date(),
      completedAt: null,
      trainingError: null,
      trainArgs: record(data.trainArgs),
    });
    if (run.epochs !== null) model.epochs = run.epochs;
    await em.flush();
    if (key.jobScope) await this.jobProgress(em, key.jobScope.jobId, 0, run.epochs);
    const owner = model.workspace.handle;
    return {
      ...received(key, envelope),
      modelId: model.id,
      runId: run.id,
      modelSlug: model.slug,
      modelUrl: `${this.publicBaseUrl}/${owner}/${model.project.slug}/${model.slug}`,
      cancelled: await this.cancelled(em, run),
    };
  }

  /**
   * The run an event belongs to: its runId, else the model's newest. Locked first, so the silence sweep skips a
   * run that is reporting, and every writer takes the run before its model (no deadlock with the sweep).
   */
  private async currentRun(em: EntityManager, model: Model, runId: number | null): Promise<TrainingRun> {
    const lockMode = LockMode.PESSIMISTIC_WRITE;
    const run = runId
      ? await em.findOne(TrainingRun, { id: runId, model }, { lockMode })
      : await em.findOne(TrainingRun, { model }, { orderBy: { id: 'desc' }, lockMode });
    if (!run)
      throw NotFound(
        runId
          ? `Run ${runId} of model ${model.id} not found`
          : `Model ${model.id} has no training run; send training_started first`,
      );
    return run;
  }

  private async apply(em: EntityManager, envelope: Envelope, model: Model, run: TrainingRun): Promise<void> {
    const data = envelope.data;
    switch (envelope.event) {
      case 'epoch_end':
        return this.epochEnd(em, data, model, run);
      case 'console_output': {
        const chunkId = int(data.chunkId) ?? 0;
        await recordConsoleChunk(
          em,
          run.id,
          chunkId,
          text(data.content, '').slice(0, 1_000_000),
          int(data.lineCount) ?? 0,
        );
        return;
      }
      case 'checkpoint_saved':
        return this.checkpoint(em, text(data.modelPath, ''), model, run);
      case 'training_complete':
        return this.complete(em, data, model, run);
      case 'training_failed':
        // A run already ended (cancelled, or taken for dead) keeps that end.
        await endRun(em, run.id, {
          outcome: 'failed',
          error: text(data.error, 'Training failed').slice(0, 10_000),
        });
        return;
      case 'training_progress':
      case 'system_metrics':
        // Liveness only: lastReportAt moved above.
        return;
    }
  }

  private async epochEnd(em: EntityManager, data: Data, model: Model, run: TrainingRun): Promise<void> {
    const epoch = int(data.epoch);
    // After the last epoch the trainer validates its best weights and reports that as one more epoch_end; the
    // final metrics come with training_complete, so it is not an epoch of its own.
    if (epoch === null || epoch < 0 || (run.epochs != null && epoch >= run.epochs)) return;
    const metrics = record(data.metrics);
    await recordEpoch(em, run.id, epoch, {
      metrics,
      system: record(data.system),
      fitness: numberOrNull(data.fitness),
      bestFitness: numberOrNull(data.best_fitness),
    });
    run.epochsDone = Math.max(run.epochsDone, epoch + 1);
    if (data.modelInfo) run.modelInfo = record(data.modelInfo);
    model.metrics = headlineMetrics(metrics) ?? model.metrics ?? null;
    if (run.job) await this.jobProgress(em, run.job.id, run.epochsDone, run.epochs);
  }

  /** The uploaded checkpoint (gcsPath = its upload session) becomes the model's weights and the run's resume point. */
  private async checkpoint(em: EntityManager, sessionId: string, model: Model, run: TrainingRun): Promise<void> {
    if (!/^[0-9a-f]{24}$/.test(sessionId)) return;
    const key = await this.uploads.promoteCheckpoint(em, sessionId, model.id);
    if (!key) return;
    run.checkpointKey = key;
    run.checkpointAt = new Date();
  }

  private async complete(em: EntityManager, data: Data, model: Model, run: TrainingRun): Promise<void> {
    const results = record(data.results);
    if (typeof results.modelPath === 'string') await this.checkpoint(em, results.modelPath, model, run);
    const onModel = await endReportedRun(em, run.id, (await this.cancelled(em, run)) ? 'cancelled' : 'completed');
    if (!onModel) return;
    const validation = record(results.validation);
    const rows = Array.isArray(validation.rows) ? validation.rows.slice(0, MAX_ANALYSIS_ROWS) : [];
    const history = await epochHistory(em, run.job ? { jobId: run.job.id } : { runId: run.id });
    Object.assign(model, {
      metrics: headlineMetrics(record(results.metrics)) ?? model.metrics ?? null,
      bestEpoch: int(results.bestEpoch),
      bestFitness: numberOrNull(results.bestFitness),
      classNames: Array.isArray(data.classNames) ? data.classNames.map(String) : model.classNames,
      trainResults: trainResults(history),
      plots: Array.isArray(data.plots) ? data.plots : [],
      analysis: rows.map((row) => (Array.isArray(row) ? analysisRow(row) : record(row))),
      validationExtremes:
        rows.length > 0 ? { population: int(validation.population), extremes: record(validation.extremes) } : null,
    });
  }

  private async cancelled(em: EntityManager, run: TrainingRun): Promise<boolean> {
    if (run.cancelRequested) return true;
    if (!run.job) return false;
    const job = await cancelRequested(em, run.job.id);
    return job?.cancel_requested ?? false;
  }

  private async jobProgress(
    em: EntityManager,
    jobId: string,
    done: number,
    epochs: number | null | undefined,
  ): Promise<void> {
    await recordTrainingProgress(em, jobId, done, epochs);
  }
}
