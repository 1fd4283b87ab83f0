import type { EntityManager } from '@mikro-orm/postgresql';
import { KNOWN_GPU_TYPE_IDS } from '@vp/protocol';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import type { BillingService } from '../billing/billing.service.ts';
import type { VersionService } from '../datasets/version.service.ts';
import { Conflict, HttpError, Invalid, NotFound } from '../http/errors.ts';
import { ActiveJobExists, enqueueJob } from '../jobs/job-queue.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { Job } from '../jobs/job.entity.ts';
import { findModel } from '../models/model-access.ts';
import { Model } from '../models/model.entity.ts';
import { resolveDatasetReference, resolveModelReference } from '../models/references.ts';
import { MODEL_YAML, type TrainArgs } from './train-args.ts';
import { TRAINING_JOB, type TrainingPayload } from './training-payload.ts';
import { someHostOffers } from '../scheduler/host-offers.ts';
import { epochHistory } from './epoch-history.ts';
import { trainingView } from './training-view.ts';
import { endRun } from './run-status.ts';
import { TrainingRun } from './training-run.entity.ts';
import { newestConsoleChunks, requestOwnComputeCancel } from './training-run.store.ts';
import {
  CONSOLE_TAIL_LINES,
  type ModelTraining,
  type TrainingCancelled,
  type TrainingStart,
  type TrainingStarted,
} from './training.schemas.ts';
import { requireProcessing } from '../datasets/connected-storage.ts';

type Address = { owner: string; project: string; model: string };

/** The spec's state table: an active training is cancelled; a trainer that is running still has to stop. */
const STOPPING = {
  success: true,
  status: 'cancelled',
  warning: 'The trainer stops after its current epoch and uploads what it has; the training shows running until it has',
} as const;

const ALREADY_TRAINING = () => Conflict('The model is already training; cancel it first');

/** Starting, reading and cancelling a model's training: a job the scheduler runs on a worker host. */
export class TrainingService {
  private readonly em: EntityManager;
  private readonly billing: BillingService;
  private readonly versions: VersionService;
  /** Hosts silent longer than this (HOST_LOST_GRACE_SECONDS) do not count as offering capacity. */
  private readonly graceSeconds: number;
  /** A cancelled run on the user's own machine silent this long (TRAINING_CANCEL_GRACE_SECONDS) is not listening. */
  private readonly cancelGraceSeconds: number;
  private readonly lifecycle: JobLifecycle;

  constructor(
    em: EntityManager,
    billing: BillingService,
    versions: VersionService,
    options: { graceSeconds: number; cancelGraceSeconds: number; lifecycle: JobLifecycle },
  ) {
    this.em = em;
    this.billing = billing;
    this.versions = versions;
    this.graceSeconds = options.graceSeconds;
    this.cancelGraceSeconds = options.cancelGraceSeconds;
    this.lifecycle = options.lifecycle;
  }

  async start(actor: Actor, body: z.output<typeof TrainingStart>): Promise<z.input<typeof TrainingStarted>> {
    const key = requireKey(actor);
    const model = await this.em.findOne(
      Model,
      { id: body.modelId, workspace: key.workspaceId, deletedAt: null },
      { populate: ['project', 'workspace'] },
    );
    if (!model) throw NotFound(`Model ${body.modelId} not found`);
    requireRole(actor, key.workspaceId, 'editor');
    if (await this.activeJob(model.id)) throw ALREADY_TRAINING();
    const gpuType = body.gpuType;
    if (gpuType !== 'cpu' && !KNOWN_GPU_TYPE_IDS.includes(gpuType))
      throw Invalid(`gpuType "${gpuType}" is not a GPU type ID (see GET /api/training/gpu-availability) or cpu`);
    const { dataset, weights } = await this.resolveInputs(actor, body.trainArgs);
    if (!(await someHostOffers(this.em, key.workspaceId, { gpuType }, this.graceSeconds))) {
      throw new HttpError(
        503,
        gpuType === 'cpu'
          ? 'No worker host is connected'
          : `No connected worker host has a ${gpuType} GPU; see GET /api/training/gpu-availability`,
      );
    }
    const gpuCount = gpuType === 'cpu' ? 0 : 1;
    const estimate = await this.billing.estimate({
      workspaceId: key.workspaceId,
      gpuType,
      gpuCount,
      epochs: body.trainArgs.epochs,
    });
    const balanceCents = await this.billing.requireCredit(key.workspaceId, estimate.estimatedCostCents);
    const datasetVersion = body.captureDatasetVersion
      ? (
          await this.versions.create(actor, dataset.workspace.handle, dataset.slug, {
            description: `Trained by ${model.project.slug}/${model.slug}`,
            download: false,
          })
        ).version
      : undefined;

    const payload: TrainingPayload = {
      modelId: model.id,
      userId: key.userId,
      datasetId: dataset.id,
      datasetVersion,
      weightsModelId: weights?.id,
      trainArgs: body.trainArgs,
      gpuType,
      estimatedCostCents: estimate.estimatedCostCents,
    };
    const job = await this.em
      .transactional(async (em) => {
        await em.nativeUpdate(
          Model,
          { id: model.id },
          {
            status: 'training',
            trainArgs: body.trainArgs,
            dataset,
            datasetSlug: dataset.slug,
            trainingError: null,
            completedAt: null,
          },
        );
        return enqueueJob(em, {
          kind: TRAINING_JOB,
          workspaceId: key.workspaceId,
          subjectId: model.id,
          exclusive: true,
          payload: { ...payload },
          host: { gpuType: gpuCount > 0 ? gpuType : null, gpuCount, restartable: true },
        });
      })
      .catch((error: unknown) => {
        // Another start won the race past the check above.
        if (error instanceof ActiveJobExists) throw ALREADY_TRAINING();
        throw error;
      });
    return {
      modelId: model.id,
      jobId: job.id,
      status: 'starting',
      gpuType,
      estimatedCost: { pricePerHour: estimate.pricePerHour, gpuMemoryGb: estimate.gpuMemoryGb ?? 0 },
      billing: {
        estimatedCostCents: estimate.estimatedCostCents,
        estimatedCostDisplay: estimate.estimatedCostDisplay,
        balanceCents,
      },
      ...(datasetVersion !== undefined && { datasetVersion }),
    };
  }

  /** data must be a dataset on the appliance; model a bundled YAML or weights on the appliance (nothing is downloaded). */
  private async resolveInputs(actor: Actor, args: TrainArgs) {
    if (!args.data.startsWith('ul://'))
      throw Invalid('trainArgs.data must be a dataset on this appliance: ul://owner/datasets/slug');
    const dataset = await resolveDatasetReference(this.em, actor, args.data);
    await this.em.populate(dataset, ['workspace']);
    await requireProcessing(this.em, dataset, 'Training');
    if (args.model.startsWith('ul://')) {
      const weights = await resolveModelReference(this.em, actor, args.model);
      if (!weights.fileKey) throw Invalid(`${args.model} has no weights yet`);
      return { dataset, weights };
    }
    if (!MODEL_YAML.test(args.model)) {
      throw Invalid(
        'trainArgs.model must be a model YAML (yolo11n.yaml: from scratch) or ul://owner/project/model: this appliance downloads nothing, so upload pretrained weights (yolo11n.pt) to a project first',
      );
    }
    return { dataset, weights: undefined };
  }

  async read(actor: Actor, at: Address): Promise<z.input<typeof ModelTraining>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    const job = await this.em.findOne(
      Job,
      { subjectId: model.id, kind: TRAINING_JOB },
      { orderBy: { createdAt: 'desc', id: 'desc' }, populate: ['host'] },
    );
    const run = await this.em.findOne(TrainingRun, job ? { model, job } : { model }, { orderBy: { id: 'desc' } });
    if (!job && !run) return { job: null };
    if (!run) return { job: trainingView(job, null, [], []) };
    const epochs = await epochHistory(this.em, job ? { jobId: job.id } : { runId: run.id });
    return { job: trainingView(job, run, epochs, await this.consoleTail(run.id)) };
  }

  /** The run's last console lines, from its newest chunks. */
  private async consoleTail(runId: number): Promise<string[]> {
    const chunks = await newestConsoleChunks(this.em, runId);
    return chunks
      .reverse()
      .flatMap((chunk) => chunk.content.split('\n'))
      .filter((line) => line !== '')
      .slice(-CONSOLE_TAIL_LINES);
  }

  /** A queued job is cancelled at once; a running trainer is told in its next webhook answer and stopped after a grace. */
  async cancel(actor: Actor, at: Address): Promise<z.input<typeof TrainingCancelled>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'edit');
    const job = await this.activeJob(model.id);
    if (job) {
      const status = await this.lifecycle.requestCancel(this.em, job.id);
      if (!status) throw Conflict('The training is no longer active');
      return status === 'cancelled' ? { success: true, status: 'cancelled' } : STOPPING;
    }
    return this.cancelOwnCompute(model.id);
  }

  /**
   * A run on the user's own machine: its trainer hears the cancel in its next epoch_end answer, stops and reports
   * its partial results. One already silent past the cancel grace is not listening (it crashed, was interrupted or
   * lost its machine) and ends cancelled now; one that goes silent after the request is ended by the silence sweep.
   */
  private async cancelOwnCompute(modelId: string): Promise<z.input<typeof TrainingCancelled>> {
    return this.em.transactional(async (em) => {
      const runs = await requestOwnComputeCancel(em, modelId, this.cancelGraceSeconds);
      if (runs.length === 0) throw Conflict('The model has no active training');
      let listening = false;
      for (const run of runs) {
        if (!run.silent) listening = true;
        else await endRun(em, run.id, { outcome: 'cancelled', error: null });
      }
      return listening ? STOPPING : { success: true, status: 'cancelled' };
    });
  }

  private activeJob(modelId: string): Promise<Job | null> {
    return this.em.findOne(Job, { subjectId: modelId, kind: TRAINING_JOB, status: { $in: ['queued', 'running'] } });
  }
}
