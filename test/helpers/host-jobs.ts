import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobSpec } from '@vp/protocol';
import { Workspace } from '../../control-plane/src/account/workspace.entity.ts';
import type { Orm } from '../../control-plane/src/db/orm.ts';
import { enqueueJob, type HostRequirements } from '../../control-plane/src/jobs/job-queue.ts';
import { Job } from '../../control-plane/src/jobs/job.entity.ts';
import { HOST_COMMAND_JOB } from '../../control-plane/src/scheduler/host-job-kinds.ts';

/** A command job as the platform queues one for a worker host (no API creates arbitrary commands). */
export async function queueCommand(
  server: { orm: Orm },
  workspaceHandle: string,
  spec: Partial<JobSpec> & Pick<JobSpec, 'command'>,
  options: Partial<HostRequirements> & { priority?: number } = {},
): Promise<string> {
  const em = server.orm.em.fork() as EntityManager;
  const workspace = await em.findOneOrFail(Workspace, { handle: workspaceHandle });
  const job = await enqueueJob(em, {
    kind: HOST_COMMAND_JOB,
    workspaceId: workspace.id,
    payload: { spec: { env: {}, workDir: 'jobs/test', gpus: { count: 0 }, ...spec } },
    priority: options.priority,
    host: {
      gpuType: options.gpuType ?? null,
      gpuCount: options.gpuCount ?? 0,
      restartable: options.restartable,
      memoryBytes: options.memoryBytes,
      toolchain: options.toolchain,
    },
  });
  return job.id;
}

export async function readJob(server: { orm: Orm }, jobId: string): Promise<Job> {
  return (server.orm.em.fork() as EntityManager).findOneOrFail(Job, { id: jobId }, { populate: ['host'] });
}

/** Polls until `check` holds, every `intervalMs`; fails with `what` after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 15_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
