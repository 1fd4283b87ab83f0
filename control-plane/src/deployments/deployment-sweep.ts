// What no request or agent message triggers: revisions whose ONNX export completed (or failed) while they waited,
// servers that never answered their health check, replaced servers done draining (their jobs cancelled), live servers
// whose host was lost (restarted elsewhere), idle default-size deployments scaled to zero, and servers gone live
// without their deployment's camera. Every replica sweeps; each change re-checks its row under the deployment's lock.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import type { CameraSync } from './deployment-camera.ts';
import { appendEvent } from './deployment-events.store.ts';
import { START_SECONDS } from './deployment.job.ts';
import { changeStatus } from './deployment-lifecycle.ts';
import { DRAIN_SECONDS, queueRevisionJob, retire, rollBack } from './deployment-rollout.ts';
import { deploymentById, idleDeployments, updateDeployment } from './deployment.store.ts';
import {
  drainingJobs,
  liveRevisionsRestarted,
  revisionById,
  revisionsAwaitingExport,
  revisionsIn,
  revisionsPastStart,
  setServiceUrl,
  type RevisionRecord,
} from './deployment-revision.store.ts';

const SWEEP_MS = 1000;
/** Beyond the agent's own start limit, for its report to arrive. */
const START_SLACK_SECONDS = 30;

export interface SweepOptions {
  lifecycle: JobLifecycle;
  idleSeconds: number;
  cameras: CameraSync;
}

/** Runs `change` on the revision, re-read under its deployment's lock, when it is still in `state`. */
async function underLock(
  em: EntityManager,
  revision: RevisionRecord,
  state: RevisionRecord['state'],
  change: (tx: EntityManager, current: RevisionRecord) => Promise<void>,
): Promise<void> {
  await em.transactional(async (tx) => {
    if (!(await deploymentById(tx, revision.deploymentId, true))) return;
    const current = await revisionById(tx, revision.id);
    if (current?.state === state) await change(tx, current);
  });
}

export async function sweepDeployments(em: EntityManager, options: SweepOptions): Promise<void> {
  for (const waiting of await revisionsAwaitingExport(em)) {
    // Still queued or running: the revision waits for it.
    if (waiting.exportFound && waiting.exportStatus === null) continue;
    await underLock(em, waiting, 'starting', async (tx, current) => {
      if (current.jobId) return;
      const deployment = (await deploymentById(tx, current.deploymentId))!;
      if (waiting.exportStatus === 'completed') return queueRevisionJob(tx, current, deployment);
      await rollBack(
        tx,
        current,
        `the model's ONNX export ${waiting.exportFound ? waiting.exportStatus : 'was deleted'}${waiting.exportError ? ` (${waiting.exportError})` : ''}`,
      );
    });
  }
  for (const silent of await revisionsPastStart(em, START_SECONDS + START_SLACK_SECONDS)) {
    await underLock(em, silent, 'starting', async (tx, current) => {
      await rollBack(tx, current, `its server did not pass its health check within ${START_SECONDS} s`);
      if (current.jobId) await options.lifecycle.requestCancel(tx, current.jobId);
    });
  }
  for (const jobId of await drainingJobs(em, { drainedSeconds: DRAIN_SECONDS }))
    await options.lifecycle.requestCancel(em, jobId);
  for (const lost of await liveRevisionsRestarted(em)) {
    await underLock(em, lost, 'live', async (tx, current) => {
      await setServiceUrl(tx, current.id, null);
      const message = `the host serving revision ${current.number} was lost; restarting it on another host`;
      if ((await deploymentById(tx, current.deploymentId))!.status === 'ready')
        await changeStatus(tx, current.deploymentId, 'deploying', { severity: 'WARNING', message });
      else await appendEvent(tx, current.deploymentId, 'WARNING', message);
    });
  }
  for (const id of await idleDeployments(em, options.idleSeconds)) {
    await em.transactional(async (tx) => {
      const deployment = await deploymentById(tx, id, true);
      if (!deployment || deployment.scaledToZero || deployment.status !== 'ready') return;
      for (const live of await revisionsIn(tx, id, ['live'])) await retire(tx, options.lifecycle, live);
      await updateDeployment(tx, id, { scaled_to_zero: true });
      await appendEvent(
        tx,
        id,
        'INFO',
        `Scaled to zero after ${options.idleSeconds} s without a request; the next request starts it again`,
      );
    });
  }
  await options.cameras.sweep(em);
}

/** Sweeps every second on every replica. */
export function scheduleDeploymentSweep(
  fork: () => EntityManager,
  options: SweepOptions,
  log: Logger,
): { stop(): Promise<void> } {
  let sweeping: Promise<void> | undefined;
  const timer = setInterval(() => {
    sweeping ??= sweepDeployments(fork(), options)
      .catch((error) => log.warn({ err: error }, 'deployment sweep failed'))
      .finally(() => (sweeping = undefined));
  }, SWEEP_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
