import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobSpec } from '@vp/protocol';
import { isModelLive } from '../models/model.store.ts';
import { jobOutputs } from '../jobs/job-output.store.ts';
import { jobError } from '../jobs/job.store.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import type { HostJobAttempt, HostJobKind, HostJobOutcome } from '../scheduler/host-job-kinds.ts';
import type { Storage } from '../storage/storage.ts';
import { exportCommand, type NormalizedArgs } from './export-args.ts';
import { artifactOf, type ExportFormatId, type Quantize } from './export-formats.ts';
import { exportById, settleExport } from './export.store.ts';

export const EXPORT_JOB = 'export';
/** The one output of an export job, under this name in job_outputs. */
export const ARTIFACT_OUTPUT = 'artifact';
/** How long the weights' download URL given to the host stays valid (a queued job may wait for its host). */
const WEIGHTS_URL_SECONDS = 24 * 3600;

/** What an export job carries to every attempt; the rest is on the export row (its subject). */
export interface ExportPayload {
  format: ExportFormatId;
  args: NormalizedArgs;
  /** The model's URL name: the weights are saved as `<stem>.pt`, so the artifact gets a readable name. */
  stem: string;
}

/**
 * A model export on a worker host whose trainer environment has the format's toolchain: plain `yolo export` of the
 * weights the export was created from; the agent uploads the artifact ultralytics writes next to them (a directory
 * as a zip) before it reports the job completed, and the export takes that file when the job ends.
 */
export class ExportJob implements HostJobKind {
  private readonly storage: Storage;

  constructor(storage: Storage) {
    this.storage = storage;
  }

  async spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec> {
    const payload = attempt.payload as unknown as ExportPayload;
    const exported = attempt.subjectId ? await exportById(em, attempt.subjectId) : undefined;
    if (!exported) throw new JobFailure('The export was deleted before it started');
    if (!(await isModelLive(em, exported.modelId)))
      throw new JobFailure('The model was deleted before its export started');
    const weights = `${payload.stem}.pt`;
    const artifact = artifactOf(payload.format, payload.stem, (payload.args.quantize ?? null) as Quantize | null);
    const onGpu = exported.gpuType !== null;
    return {
      command: exportCommand(payload.format, payload.args, weights, onGpu),
      env: { YOLO_OFFLINE: '1', YOLO_AUTOINSTALL: 'false' },
      workDir: `exports/${attempt.id}/${attempt.attempt}`,
      gpus: { count: onGpu ? 1 : 0 },
      inputs: [
        {
          url: await this.storage.urls.download(exported.weightsKey, {
            expiresInSeconds: WEIGHTS_URL_SECONDS,
            filename: weights,
          }),
          path: weights,
        },
      ],
      outputs: [{ path: artifact.path, name: ARTIFACT_OUTPUT }],
    };
  }

  /** Completed only with its uploaded artifact (its upload already counted it as the workspace's export storage). */
  async ended(em: EntityManager, attempt: HostJobAttempt, outcome: HostJobOutcome): Promise<void> {
    if (!attempt.subjectId) return;
    const payload = attempt.payload as unknown as ExportPayload;
    if (outcome !== 'completed') {
      const job = await jobError(em, attempt.id);
      await settleExport(em, attempt.subjectId, {
        status: outcome,
        error: outcome === 'cancelled' ? null : (job?.error ?? 'The export failed'),
      });
      return;
    }
    const output = (await jobOutputs(em, attempt.id)).find((candidate) => candidate.name === ARTIFACT_OUTPUT);
    if (!output) {
      await settleExport(em, attempt.subjectId, {
        status: 'failed',
        error: 'The export job ended without uploading the exported model',
      });
      return;
    }
    const name = artifactOf(
      payload.format,
      payload.stem,
      (payload.args.quantize ?? null) as Quantize | null,
    ).downloadName;
    await settleExport(em, attempt.subjectId, {
      status: 'completed',
      error: null,
      file: { key: output.storageKey, size: output.size, sha256: output.sha256, name },
    });
  }
}
