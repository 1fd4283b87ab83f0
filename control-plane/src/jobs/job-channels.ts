// The NOTIFY channels (and payloads) by which replicas tell each other of jobs; job-queue.ts re-exports them.
/** NOTIFY channel that wakes every replica's runner when work is queued. */
export const JOBS_CHANNEL = 'vp_jobs';
/**
 * JOBS_CHANNEL payload asking schedulers to release host jobs whose lease ended now (a host was disconnected) and to
 * settle host jobs that ended (their kind's bookkeeping).
 */
export const SETTLE_JOBS = 'settle';
/** JOBS_CHANNEL payload when lost host jobs went back to the queue. */
export const REQUEUED_HOST_JOBS = 'requeued';
/** NOTIFY channel carrying the id of a running job to cancel, so whichever replica runs it stops at once. */
export const JOB_CANCEL_CHANNEL = 'vp_job_cancel';
