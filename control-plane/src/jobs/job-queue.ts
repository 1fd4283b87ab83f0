import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { Job } from './job.entity.ts';

/** NOTIFY channel that wakes every replica's runner when work is queued. */
export const JOBS_CHANNEL = 'vp_jobs';
/**
 * JOBS_CHANNEL payload asking schedulers to release host jobs whose lease ended now (a host was disconnected) and to
 * settle host jobs that ended (their kind's bookkeeping).
 */
export const SETTLE_JOBS = 'settle';
/** NOTIFY channel carrying the id of a running job to cancel, so whichever replica runs it stops at once. */
export const JOB_CANCEL_CHANNEL = 'vp_job_cancel';

export interface NewJob {
  kind: string;
  workspaceId: string;
  subjectId?: string;
  payload: Record<string, unknown>;
  priority?: number;
  maxAttempts?: number;
  /** Set for a job that runs on a worker host (the scheduler assigns it) rather than in a control plane. */
  host?: HostRequirements;
}

export interface HostRequirements {
  /** A GPU type ID (h100-sxm, …); null: any type. Ignored with gpuCount 0 (a CPU job). */
  gpuType: string | null;
  gpuCount: number;
  /** Host memory the job needs (only hosts with at least this much take it). */
  memoryBytes?: number;
  /** Requeue rather than fail when its host is lost mid-run. */
  restartable?: boolean;
}

/** Queues a job (flushed with the caller's unit of work) and wakes the runners once it commits. */
export async function enqueueJob(em: EntityManager, job: NewJob): Promise<Job> {
  const created = em.create(Job, {
    workspace: job.workspaceId,
    kind: job.kind,
    subjectId: job.subjectId ?? null,
    payload: job.payload,
    priority: job.priority ?? 0,
    maxAttempts: job.maxAttempts ?? 3,
    ...(job.host && {
      placement: 'host' as const,
      gpuType: job.host.gpuCount > 0 ? job.host.gpuType : null,
      gpuCount: job.host.gpuCount,
      memoryBytes: job.host.memoryBytes ?? null,
      restartable: job.host.restartable ?? false,
    }),
  });
  await em.flush();
  // Delivered at commit, so a runner never wakes for a job it cannot see yet.
  await query(em, `select pg_notify('${JOBS_CHANNEL}', ?)`, [job.kind]);
  return created;
}
