import type { JobStatus } from './job.entity.ts';

/**
 * The moves a job's status may make. PostgreSQL refuses any other (trigger jobs_status_transition, migration
 * job_lifecycle), so an ended job can never be run again whatever statement tries.
 *
 * - queued → running: a control plane's runner claims it, the scheduler assigns it to a host, or its host takes it back.
 * - queued → cancelled | failed: cancelled before it ran; its command could not be built.
 * - running → queued: its process or host was lost and it may run again (or it was never started there).
 * - running → completed | failed | cancelled: it ended.
 */
export const JOB_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  queued: ['running', 'cancelled', 'failed'],
  running: ['queued', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export const ACTIVE_JOB_STATUSES = ['queued', 'running'] as const satisfies readonly JobStatus[];
