import type { EntityManager } from '@mikro-orm/postgresql';
import { INFERENCE_SERVER, SERVER_ENV, SERVICE_PORT, SERVICE_ROUTES } from '@vp/inference-server/contract';
import type { JobSpec } from '@vp/protocol';
import { exportById } from '../exports/export.store.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import { modelFullName } from '../models/model.store.ts';
import type { HostJobAttempt, HostJobKind, HostJobOutcome } from '../scheduler/host-job-kinds.ts';
import type { Storage } from '../storage/storage.ts';
import { revisionEnded } from './deployment-rollout.ts';
import { revisionById, sealedTokenOf } from './deployment-revision.store.ts';
import { revisionToken } from './deployment-tokens.ts';
import { CredentialsUnreadable } from '../integrations/credential-cipher.ts';

/** How long a revision's server may take to answer its health check (model download and load included). */
export const START_SECONDS = 300;
/** The ONNX file's name in the job's work dir. */
const MODEL_FILE = 'model.onnx';
/** The model's download URL given to the host; every attempt (a restart elsewhere) gets a fresh one. */
const MODEL_URL_SECONDS = 24 * 3600;

/**
 * One revision of a deployment: a service host job (it never ends by itself) running the inference server on the
 * model's ONNX export, with the revision's size as its CPU and memory limits, on a host that runs inference in the
 * deployment's region. Restartable: a lost host's revision is requeued and started elsewhere.
 */
export class DeploymentJob implements HostJobKind {
  private readonly storage: Storage;
  private readonly maxBytes: number;

  constructor(storage: Storage, options: { predictMaxBytes: number }) {
    this.storage = storage;
    this.maxBytes = options.predictMaxBytes;
  }

  async spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec> {
    const revision = attempt.subjectId ? await revisionById(em, attempt.subjectId) : undefined;
    if (!revision || revision.state === 'retired' || revision.state === 'failed')
      throw new JobFailure('The deployment revision was removed before it started');
    const onnx = revision.exportId ? await exportById(em, revision.exportId) : undefined;
    if (!onnx?.fileKey) throw new JobFailure("The model's ONNX export was deleted before the revision started");
    const token = await tokenOf(em, revision.id);
    // Answered as predict's metadata.model, as the control plane's own predict names it.
    const modelName = await modelFullName(em, revision.modelId);
    return {
      environment: 'inference',
      command: [INFERENCE_SERVER],
      env: {
        [SERVER_ENV.model]: MODEL_FILE,
        [SERVER_ENV.token]: token,
        [SERVER_ENV.maxBytes]: String(this.maxBytes),
        ...(modelName !== undefined && { [SERVER_ENV.modelName]: modelName }),
      },
      workDir: `deployments/${revision.deploymentId}/${revision.number}/${attempt.attempt}`,
      gpus: { count: 0 },
      cpus: revision.cpu,
      memoryBytes: revision.memoryGi * 2 ** 30,
      inputs: [
        {
          url: await this.storage.urls.download(onnx.fileKey, {
            expiresInSeconds: MODEL_URL_SECONDS,
            filename: MODEL_FILE,
          }),
          path: MODEL_FILE,
        },
      ],
      service: { port: SERVICE_PORT, healthPath: SERVICE_ROUTES.health, startSeconds: START_SECONDS },
    };
  }

  async ended(em: EntityManager, attempt: HostJobAttempt, outcome: HostJobOutcome): Promise<void> {
    if (attempt.subjectId) await revisionEnded(em, attempt.subjectId, attempt.id, outcome);
  }
}

/** The revision's token for its server, opened from its row. */
async function tokenOf(em: EntityManager, revisionId: string): Promise<string> {
  try {
    return revisionToken(em, (await sealedTokenOf(em, revisionId))!);
  } catch (error) {
    if (error instanceof CredentialsUnreadable) throw new JobFailure(`The revision cannot start: ${error.message}`);
    throw error;
  }
}
