// A deployment's revisions over time: a new one starts (create, start, replace, resize, wake) while the live one keeps
// serving; it goes live when its agent reports its service (job.service), and only then is the old one retired and its
// job cancelled. A revision that fails before that is marked failed and the deployment stays on the live one. Every
// status change, revision start, failure and rollback is logged as a deployment event.
import type { EntityManager } from '@mikro-orm/postgresql';
import { announceAuthChange } from '../auth/authenticator.ts';
import type { ExportRecord } from '../exports/export.store.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { enqueueJob } from '../jobs/job-queue.ts';
import { isRunningOnHost, jobError } from '../jobs/job.store.ts';
import type { Model } from '../models/model.entity.ts';
import type { HostJobOutcome } from '../scheduler/host-job-kinds.ts';
import { appendEvent } from './deployment-events.store.ts';
import { changeStatus } from './deployment-lifecycle.ts';
import {
  deleteDeploymentRows,
  deploymentById,
  deploymentsUsingModels,
  updateDeployment,
  type DeploymentRecord,
} from './deployment.store.ts';
import type { DeploymentSize } from './deployment-sizes.ts';
import {
  drainingJobs,
  hasActiveJobs,
  insertRevision,
  revisionById,
  revisionOfJob,
  revisionsIn,
  setRevisionJob,
  setServiceUrl,
  type RevisionRecord,
} from './deployment-revision.store.ts';
import { newSealedToken } from './deployment-tokens.ts';
import { changeRevisionState } from './revision-lifecycle.ts';

export const DEPLOYMENT_JOB = 'deployment';
/**
 * How long a replaced revision's server runs on once the new one took the traffic, before its job is cancelled (the
 * deployment sweep does it): a request routed to it just before still finds it listening. Its server then answers what
 * it had accepted before it exits (its agent's stop grace bounds that).
 */
export const DRAIN_SECONDS = 5;
/** Host losses a revision survives (each requeues it elsewhere) before it fails. */
const MAX_ATTEMPTS = 100;

/**
 * Starts a revision of `model` at `size` from its ONNX export (queueOnnxExport, before the caller's transaction): its job
 * is queued at once when the export is completed, else by the deployment sweep once it is.
 */
export async function startRevision(
  em: EntityManager,
  deployment: Pick<DeploymentRecord, 'id' | 'workspaceId' | 'region'>,
  model: Model,
  size: DeploymentSize,
  onnx: ExportRecord,
): Promise<RevisionRecord> {
  const revision = await insertRevision(
    em,
    deployment.id,
    model.id,
    size,
    onnx.id,
    newSealedToken(em, deployment.workspaceId),
  );
  await appendEvent(
    em,
    deployment.id,
    'INFO',
    `Revision ${revision.number} starting: model ${model.slug}, ${size.cpu} CPU, ${size.memoryGi} GiB`,
  );
  if (onnx.status === 'completed') await queueRevisionJob(em, revision, deployment);
  return revision;
}

/** The revision's service job, restartable on another host of the region when its host is lost. */
export async function queueRevisionJob(
  em: EntityManager,
  revision: RevisionRecord,
  deployment: Pick<DeploymentRecord, 'id' | 'workspaceId' | 'region'>,
): Promise<void> {
  const job = await enqueueJob(em, {
    kind: DEPLOYMENT_JOB,
    workspaceId: deployment.workspaceId,
    subjectId: revision.id,
    payload: { deploymentId: deployment.id, revision: revision.number },
    maxAttempts: MAX_ATTEMPTS,
    host: {
      gpuType: null,
      gpuCount: 0,
      memoryBytes: revision.memoryGi * 2 ** 30,
      restartable: true,
      region: deployment.region,
      service: 'inference',
    },
  });
  await setRevisionJob(em, revision.id, job.id);
  await changeStatus(em, deployment.id, 'deploying', { message: `revision ${revision.number} waits for a host` }, [
    'creating',
  ]);
}

/**
 * The agent of `hostId` says the job's server answers its health check at `url`. A starting revision goes live: the
 * live one before it is retired (its job cancelled) and the deployment is ready on the new one. A live revision
 * restarted elsewhere (or reconnected) gets its new URL and is ready again. False: no revision's job runs there.
 */
export async function serviceReported(
  em: EntityManager,
  lifecycle: JobLifecycle,
  hostId: string,
  jobId: string,
  url: string,
): Promise<boolean> {
  const running = await isRunningOnHost(em, jobId, hostId);
  const revision = running && (await revisionOfJob(em, jobId));
  if (!revision) return false;
  const deployment = await deploymentById(em, revision.deploymentId, true);
  if (!deployment) return true;
  if (revision.state === 'live') {
    // Restarted (elsewhere) or reconnected: its new URL, and its idle and restart clocks start again. A replacement
    // still rolling out keeps the deployment deploying.
    await setServiceUrl(em, revision.id, url);
    await changeRevisionState(em, revision.id, 'live');
    const rollingOut = (await revisionsIn(em, deployment.id, ['starting'])).length > 0;
    if (deployment.status === 'deploying' && !rollingOut)
      await changeStatus(em, deployment.id, 'ready', { message: `revision ${revision.number} serves again` });
    return true;
  }
  if (revision.state !== 'starting') return true;
  for (const old of await revisionsIn(em, deployment.id, ['live'])) await retire(em, lifecycle, old, { drain: true });
  await setServiceUrl(em, revision.id, url);
  await changeRevisionState(em, revision.id, 'live');
  await updateDeployment(em, deployment.id, {
    model_id: revision.modelId,
    cpu: revision.cpu,
    memory_gi: revision.memoryGi,
    deployed_at: new Date(),
    scaled_to_zero: false,
  });
  await changeStatus(em, deployment.id, 'ready', {
    message: `revision ${revision.number} is live and takes the traffic`,
  });
  return true;
}

/**
 * Takes the revision out of service and cancels its job (its end then changes nothing more); with `drain`, the deployment
 * sweep cancels it DRAIN_SECONDS later. Nothing is done when it had ended already (retired or failed).
 */
export async function retire(
  em: EntityManager,
  lifecycle: JobLifecycle,
  revision: RevisionRecord,
  options: { drain?: boolean } = {},
): Promise<void> {
  if (!(await changeRevisionState(em, revision.id, 'retired'))) return;
  await appendEvent(
    em,
    revision.deploymentId,
    'INFO',
    `Revision ${revision.number} retired${options.drain ? `; its server stops in ${DRAIN_SECONDS} s` : ''}`,
  );
  if (revision.jobId && !options.drain) await lifecycle.requestCancel(em, revision.jobId);
}

/**
 * A revision's job ended for good (in the transaction that ended it). A starting revision that failed is rolled back:
 * the deployment stays on its live revision (ready, saying why) or, with none, fails. A live one whose server stopped
 * leaves the deployment failed. A stopping deployment whose last job ended is stopped.
 */
export async function revisionEnded(
  em: EntityManager,
  revisionId: string,
  jobId: string,
  outcome: HostJobOutcome,
): Promise<void> {
  const revision = await revisionById(em, revisionId);
  const deployment = revision && (await deploymentById(em, revision.deploymentId, true));
  if (!revision || !deployment) return;
  const job = await jobError(em, jobId);
  const reason = outcome === 'completed' ? 'its server exited' : (job?.error ?? `its job ${outcome}`);
  if (revision.state === 'starting') return rollBack(em, revision, reason);
  if (revision.state === 'live') {
    await changeRevisionState(em, revision.id, 'failed', reason);
    await setServiceUrl(em, revision.id, null);
    const stopped = `The server of revision ${revision.number} stopped: ${reason}`;
    await changeStatus(em, deployment.id, 'failed', {
      severity: 'ERROR',
      statusMessage: `${stopped}; start the deployment again`,
      message: stopped,
    });
    return;
  }
  if (deployment.status === 'stopping' && !(await hasActiveJobs(em, deployment.id)))
    await changeStatus(em, deployment.id, 'stopped', { message: 'every server stopped' });
}

/**
 * A starting revision failed (its job ended, its export failed, no health in time): marked failed; the deployment stays
 * on its live revision (ready, its message saying why) or, with none, fails. Nothing is done when it had ended already.
 */
export async function rollBack(em: EntityManager, revision: RevisionRecord, reason: string): Promise<void> {
  if (!(await changeRevisionState(em, revision.id, 'failed', reason))) return;
  const [live] = await revisionsIn(em, revision.deploymentId, ['live']);
  const failed = `Revision ${revision.number} failed: ${reason}`;
  if (live) {
    await changeStatus(em, revision.deploymentId, 'ready', {
      severity: 'ERROR',
      statusMessage: `${failed}; still serving revision ${live.number}`,
      message: `${failed}; rolled back to revision ${live.number}`,
    });
  } else {
    await changeStatus(em, revision.deploymentId, 'failed', {
      severity: 'ERROR',
      statusMessage: failed,
      message: failed,
    });
  }
}

/** Retires every serving or starting revision; their jobs are cancelled, and those of revisions still draining. */
export async function retireAll(em: EntityManager, lifecycle: JobLifecycle, deploymentId: string): Promise<void> {
  for (const revision of await revisionsIn(em, deploymentId, ['starting', 'live']))
    await retire(em, lifecycle, revision);
  for (const jobId of await drainingJobs(em, { deploymentId })) await lifecycle.requestCancel(em, jobId);
}

/** Deletes deployments for good: their servers are stopped, their rows and their keys go (key caches told). */
export async function deleteDeployments(em: EntityManager, lifecycle: JobLifecycle, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await em.transactional(async (tx) => {
    for (const id of ids) await retireAll(tx, lifecycle, id);
    await deleteDeploymentRows(tx, ids);
    await announceAuthChange(tx);
  });
}

/** A model (or its project) was deleted: its deployments, and those replacing their model by it, go for good. */
export async function deleteDeploymentsOf(
  em: EntityManager,
  lifecycle: JobLifecycle,
  modelIds: string[],
): Promise<number> {
  const ids = await deploymentsUsingModels(em, modelIds);
  await deleteDeployments(em, lifecycle, ids);
  return ids.length;
}
