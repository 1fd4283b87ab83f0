import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import type { JobSpec } from '@vp/protocol';
import { BillingService } from '../billing/billing.service.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import { jobErrorAndRunSeconds } from '../jobs/job.store.ts';
import { Model } from '../models/model.entity.ts';
import type { HostJobAttempt, HostJobKind, HostJobOutcome } from '../scheduler/host-job-kinds.ts';
import { mintJobKey, revokeJobKeys } from './job-keys.ts';
import { endJobModel, endJobRuns } from './run-status.ts';
import {
  completedModelOfJob,
  epochsDoneOfJob,
  JOB_RUN_COMPLETED,
  JOB_RUN_COMPLETED_AT,
  latestResumeKey,
} from './training-run.store.ts';
import type { WeightsArrived } from '../predict/weights-arrived.ts';
import type { Storage } from '../storage/storage.ts';
import { resumeCommand, trainCommand } from './train-args.ts';
import type { TrainingPayload } from './training-payload.ts';

/** Where a resumed attempt finds the checkpoint it continues from, in its work dir. */
const RESUME_FILE = 'resume/last.pt';
/** Room for the data loader's workers in the container (Docker's default of 64 MB stalls them). */
const SHM_BYTES = 2 * 2 ** 30;

/**
 * A training job on a worker host: each attempt runs plain `yolo train` with a key minted for it, reporting
 * through the webhooks; when the job ends its key dies, the model and run get their final state, the run time is
 * charged, and a completed model's automatic ONNX export is queued (only now: queued at training_complete, the export
 * started on the same host while the trainer was still finishing, and slowed both).
 */
export class TrainingJob implements HostJobKind {
  /** The trainer reported training_complete (its weights are in): a lost attempt is complete, never trained again. */
  readonly completedWhen = JOB_RUN_COMPLETED;
  /** When the trainer reported training_complete: a lost attempt ran (and is charged) until then, and ended then. */
  readonly completedAt = JOB_RUN_COMPLETED_AT;
  /** A cancelled trainer stops at its next epoch end and uploads what it has; only after this is it stopped. */
  readonly cancelGraceSeconds: number;
  private readonly config: AppConfig;
  private readonly storage: Storage;
  private readonly weightsArrived: (em: EntityManager) => WeightsArrived;

  /** `weightsArrived`: told, in the job's ending transaction, of a model whose training completed. */
  constructor(config: AppConfig, storage: Storage, weightsArrived: (em: EntityManager) => WeightsArrived) {
    this.config = config;
    this.storage = storage;
    this.weightsArrived = weightsArrived;
    this.cancelGraceSeconds = config.trainingCancelGraceSeconds;
  }

  async spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec> {
    const payload = attempt.payload as unknown as TrainingPayload;
    const model = await em.findOne(
      Model,
      { id: payload.modelId, deletedAt: null },
      { populate: ['project', 'workspace'] },
    );
    if (!model) throw new JobFailure('The model was deleted before training started');
    const dataset = await em.findOne(Dataset, { id: payload.datasetId, deletedAt: null });
    if (!dataset) throw new JobFailure('The dataset was deleted before training started');
    const weights = payload.weightsModelId
      ? await em.findOne(Model, { id: payload.weightsModelId, deletedAt: null })
      : null;
    if (payload.weightsModelId && !weights?.fileKey)
      throw new JobFailure(`The base weights ${payload.trainArgs.model} are gone`);
    const key = await mintJobKey(em, {
      workspaceId: attempt.workspaceId,
      userId: payload.userId,
      scope: {
        jobId: attempt.id,
        modelId: model.id,
        resourceIds: [model.id, model.project.id, dataset.id, ...(weights ? [weights.id, weights.project.id] : [])],
        ...(payload.datasetVersion !== undefined && { datasetVersion: payload.datasetVersion }),
      },
    });
    const gpuCount = attempt.gpuIndexes.length;
    // An earlier attempt's host was lost after uploading a checkpoint: this one continues from there.
    const resume = await latestResumeKey(em, attempt.id);
    const target = { owner: model.workspace.handle, project: model.project.slug, model: model.slug, gpuCount };
    return {
      command: resume ? resumeCommand(payload.trainArgs, target, RESUME_FILE) : trainCommand(payload.trainArgs, target),
      env: {
        ULTRALYTICS_PLATFORM_URL: this.storage.signer.baseUrl(),
        ULTRALYTICS_API_KEY: key,
        YOLO_OFFLINE: '1',
        YOLO_AUTOINSTALL: 'false',
      },
      workDir: `training/${attempt.id}/${attempt.attempt}`,
      gpus: { count: gpuCount },
      shmBytes: SHM_BYTES,
      // ultralytics rewrites runs/<task>/<owner>/<project>/<model>/weights/last.pt after every epoch.
      checkpoint: { under: 'runs', file: 'last.pt', everySeconds: this.config.trainingCheckpointSeconds },
      ...(resume && {
        inputs: [
          {
            url: await this.storage.urls.download(resume.resume_key, {
              expiresInSeconds: 24 * 3600,
              filename: 'last.pt',
            }),
            path: RESUME_FILE,
          },
        ],
      }),
    };
  }

  async ended(em: EntityManager, attempt: HostJobAttempt, outcome: HostJobOutcome): Promise<void> {
    const payload = attempt.payload as unknown as TrainingPayload;
    await revokeJobKeys(em, attempt.id);
    const job = await jobErrorAndRunSeconds(em, attempt.id);
    await endJobRuns(em, attempt.id, outcome);
    // A trainer that exited without reporting its end (or never started reporting) leaves the model to this.
    const modelError =
      outcome === 'completed' ? 'The trainer exited without reporting its results' : (job?.error ?? null);
    await endJobModel(em, payload.modelId, {
      outcome: outcome === 'completed' ? 'failed' : outcome,
      error: outcome === 'cancelled' ? null : modelError,
    });
    const epochs = await epochsDoneOfJob(em, attempt.id);
    const model = await em.findOne(Model, { id: payload.modelId }, { populate: ['project', 'workspace'] });
    await new BillingService(em, this.config).chargeJob({
      workspaceId: attempt.workspaceId,
      jobId: attempt.id,
      gpuType: payload.gpuType,
      gpuCount: payload.gpuType === 'cpu' ? 0 : 1,
      seconds: Math.max(0, job?.seconds ?? 0),
      epochs: epochs?.done ?? 0,
      description: `Training ${model ? `${model.workspace.handle}/${model.project.slug}/${model.slug}` : payload.modelId}`,
    });
    const trained = await completedModelOfJob(em, attempt.id);
    if (trained) await this.weightsArrived(em)([trained.id]);
  }
}
