import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Job } from './job.entity.ts';
import { notifyJobQueued } from './job.store.ts';

export { JOB_CANCEL_CHANNEL, JOBS_CHANNEL, REQUEUED_HOST_JOBS, SETTLE_JOBS } from './job-channels.ts';

export interface NewJob {
  kind: string;
  workspaceId: string;
  subjectId?: string;
  payload: Record<string, unknown>;
  priority?: number;
  maxAttempts?: number;
  /** At most one queued or running job of this kind per subject (a model's training): enqueueJob throws ActiveJobExists. */
  exclusive?: boolean;
  /** Set for a job that runs on a worker host (the scheduler assigns it) rather than in a control plane. */
  host?: HostRequirements;
}

export interface HostRequirements {
  /** A GPU type ID (h100-sxm, …); null: any type. Ignored with gpuCount 0 (a CPU job). */
  gpuType: string | null;
  gpuCount: number;
  /** Host memory the job needs (only hosts with at least this much take it). */
  memoryBytes?: number;
  /** An export format whose toolchain the host must report (`capabilities`); absent: any host. */
  toolchain?: string;
  /** Requeue rather than fail when its host is lost mid-run. */
  restartable?: boolean;
  /** A deployment region: only hosts in it, or of no region, take the job. */
  region?: string;
  /** A service (JobSpec.service) only hosts that report it (`capabilities.services`) run. */
  service?: string;
}

/** An exclusive job's subject already has an active job of its kind (two starts raced past their checks). */
export class ActiveJobExists extends Error {}

/** The partial unique index that keeps exclusive jobs one per subject (migration job_lifecycle). */
const ONE_ACTIVE_PER_SUBJECT = 'jobs_one_active_per_subject';

/** Queues a job (flushed with the caller's unit of work) and wakes the runners once it commits. */
export async function enqueueJob(em: EntityManager, job: NewJob): Promise<Job> {
  if (job.exclusive && !job.subjectId) throw new Error('an exclusive job needs a subject');
  const created = em.create(Job, {
    workspace: job.workspaceId,
    kind: job.kind,
    subjectId: job.subjectId ?? null,
    payload: job.payload,
    priority: job.priority ?? 0,
    maxAttempts: job.maxAttempts ?? 3,
    exclusive: job.exclusive ?? false,
    ...(job.host && {
      placement: 'host' as const,
      gpuType: job.host.gpuCount > 0 ? job.host.gpuType : null,
      gpuCount: job.host.gpuCount,
      memoryBytes: job.host.memoryBytes ?? null,
      toolchain: job.host.toolchain ?? null,
      restartable: job.host.restartable ?? false,
      region: job.host.region ?? null,
      service: job.host.service ?? null,
    }),
  });
  await em.flush().catch((error: unknown) => {
    if (error instanceof UniqueConstraintViolationException && error.message.includes(ONE_ACTIVE_PER_SUBJECT))
      throw new ActiveJobExists(error.message);
    throw error;
  });
  // Delivered at commit, so a runner never wakes for a job it cannot see yet.
  await notifyJobQueued(em, job.kind);
  return created;
}
