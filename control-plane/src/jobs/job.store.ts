// The jobs table (with its job_logs lines), everything but status: leases, acceptance, progress, logs, and the reads
// the scheduler, runner and services make. Status changes are jobs/job-lifecycle.ts's alone (it is the store for a
// job's status and settlement: its guarded UPDATEs stay next to the settling they start, so no other module can change
// a status). Every write here is guarded by who holds the job (its host or lease owner) and its status, so a message
// from a holder that lost the job changes nothing.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { Job, type JobProgress, type JobStatus } from './job.entity.ts';
import { JOBS_CHANNEL } from './job-channels.ts';

/** The columns a job is run from, as SQL returns them. */
export interface JobColumns {
  id: string;
  kind: string;
  workspace_id: string;
  subject_id: string | null;
  payload: Record<string, unknown>;
  attempts: number;
}

/** Log lines kept per job; later ones are dropped (one marker line says so). */
export const MAX_JOB_LOG_LINES = 100_000;

// --- Host jobs (the scheduler and worker sessions): held by their host. ---

export async function renewHostLeases(em: EntityManager, hostId: string, graceSeconds: number): Promise<void> {
  await query(
    em,
    `update jobs set lease_expires_at = now() + make_interval(secs => ?) where host_id = ? and status = 'running'`,
    [graceSeconds, hostId],
  );
}

/** The host confirmed it started the job. Null: the job is not (or no longer) this host's to run. */
export async function markAccepted(
  em: EntityManager,
  hostId: string,
  jobId: string,
): Promise<{ cancelRequested: boolean } | null> {
  const [row] = await query<{ cancel_requested: boolean }>(
    em,
    `update jobs set accepted_at = coalesce(accepted_at, now()), progress = coalesce(progress, '{}'::jsonb) || '{"stage":"running"}'::jsonb, updated_at = now()
     where id = ? and host_id = ? and status = 'running' returning cancel_requested`,
    [jobId, hostId],
  );
  return row ? { cancelRequested: row.cancel_requested } : null;
}

export async function recordProgress(
  em: EntityManager,
  hostId: string,
  jobId: string,
  fraction: number,
): Promise<void> {
  await query(
    em,
    `update jobs set progress = jsonb_build_object('stage', 'running', 'percent', ?::numeric), updated_at = now() where id = ? and host_id = ? and status = 'running'`,
    [Math.round(fraction * 1000) / 10, jobId, hostId],
  );
}

/** Appends lines in order, up to MAX_JOB_LOG_LINES per job; false when the job is not this host's. */
export async function appendLogs(
  em: EntityManager,
  hostId: string,
  jobId: string,
  stream: string,
  lines: string[],
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const [row] = await query<{ before: number }>(
      tx,
      `with old as (select id, log_lines from jobs where id = ? and host_id = ? and status = 'running' for update)
       update jobs j set log_lines = least(old.log_lines + ?, ?) from old where j.id = old.id returning old.log_lines as before`,
      [jobId, hostId, lines.length, MAX_JOB_LOG_LINES],
    );
    if (!row) return false;
    const room = MAX_JOB_LOG_LINES - row.before;
    if (room <= 0) return true;
    const kept =
      lines.length <= room
        ? lines
        : [...lines.slice(0, room), `[log truncated: only the first ${MAX_JOB_LOG_LINES} lines are kept]`];
    await query(
      tx,
      `insert into job_logs (job_id, stream, line, at) select ?, ?, line, now() from unnest(?::text[]) with ordinality as l(line, n) order by n`,
      [jobId, stream, pgArray(kept)],
    );
    return true;
  });
}

/** A page of a job's log lines after `after` (their seq), in arrival order. */
export function jobLogLines(
  em: EntityManager,
  jobId: string,
  after: number,
  limit: number,
): Promise<Array<{ seq: string; stream: 'stdout' | 'stderr'; line: string; at: string | Date }>> {
  return query<{ seq: string; stream: 'stdout' | 'stderr'; line: string; at: string | Date }>(
    em,
    'select seq, stream, line, at from job_logs where job_id = ? and seq > ? order by seq limit ?',
    [jobId, after, limit],
  );
}

/** The job, when it runs on the host (and is of `kind`, when given); `lock`: held until the caller's transaction ends. */
export async function runningJobOfHost(
  em: EntityManager,
  jobId: string,
  hostId: string,
  kind: string | undefined,
  lock: boolean,
): Promise<{ workspace_id: string; subject_id: string | null; attempts: number } | undefined> {
  const [row] = await query<{ workspace_id: string; subject_id: string | null; attempts: number }>(
    em,
    `select workspace_id, subject_id, attempts from jobs where id = ? and host_id = ? and status = 'running' and (?::text is null or kind = ?)${lock ? ' for update' : ''}`,
    [jobId, hostId, kind ?? null, kind ?? null],
  );
  return row;
}

/** A running host job's host and kind (to forward a cancel); undefined when it is not running on a host. */
export async function runningHostJob(
  em: EntityManager,
  jobId: string,
): Promise<{ host_id: string | null; kind: string } | undefined> {
  const [row] = await query<{ host_id: string | null; kind: string }>(
    em,
    `select host_id, kind from jobs where id = ? and placement = 'host' and status = 'running'`,
    [jobId],
  );
  return row;
}

/** Running host jobs on `hostIds` whose cancel was requested: their hosts are told again after a missed notification. */
export async function cancelledHostJobs(em: EntityManager, hostIds: string[]): Promise<string[]> {
  const rows = await query<{ id: string }>(
    em,
    `select id from jobs where placement = 'host' and status = 'running' and cancel_requested and host_id = any(?::text[])`,
    [pgArray(hostIds)],
  );
  return rows.map((row) => row.id);
}

/** The slots the jobs running on each of `hostIds` hold. */
export function runningJobsOnHosts(
  em: EntityManager,
  hostIds: string[],
): Promise<Array<{ host_id: string; gpu_indexes: number[] | null; gpu_count: number; service: string | null }>> {
  return query<{ host_id: string; gpu_indexes: number[] | null; gpu_count: number; service: string | null }>(
    em,
    `select host_id, gpu_indexes, gpu_count, service from jobs where host_id = any(?::text[]) and status = 'running'`,
    [pgArray(hostIds)],
  );
}

/** A queued host job as the scheduler places it. */
/** A queued host job as a dispatch places it; what its attempt runs is read once it is locked (LockedQueuedJob). */
export interface QueuedHostJobRow extends Pick<JobColumns, 'id' | 'kind' | 'workspace_id'> {
  gpu_type: string | null;
  gpu_count: number;
  memory_bytes: string | null;
  toolchain: string | null;
  region: string | null;
  service: string | null;
}

/**
 * One look at the queue for some hosts: jobs of their workspace (null: the pool's hosts, which take every workspace's),
 * either those needing no GPU (`gpuTypes` null) or those needing GPUs of one of `gpuTypes` or of any type.
 */
export interface QueueRead {
  workspaceId: string | null;
  gpuTypes: string[] | null;
  /** How many of the first such jobs, in queue order. */
  window: number;
}

/**
 * The queued host jobs of `kinds` each read asks for, all in queue order (priority, then age), each once. A read per
 * kind of slot, so a host's free CPU slot or GPU type is not hidden behind a backlog of jobs for others.
 */
export function queuedHostJobs(em: EntityManager, kinds: string[], reads: QueueRead[]): Promise<QueuedHostJobRow[]> {
  const params: unknown[] = [];
  const parts = reads.map((read) => {
    params.push(pgArray(kinds), read.workspaceId, read.workspaceId);
    if (read.gpuTypes) params.push(pgArray(read.gpuTypes));
    params.push(read.window);
    const slots = read.gpuTypes ? 'gpu_count > 0 and (gpu_type is null or gpu_type = any(?::text[]))' : 'gpu_count = 0';
    return `(select id, kind, workspace_id, gpu_type, gpu_count, memory_bytes, toolchain, region, service, priority, created_at from jobs
         where placement = 'host' and status = 'queued' and kind = any(?::text[]) and (?::varchar is null or workspace_id = ?) and ${slots}
         order by priority desc, created_at, id limit ?)`;
  });
  if (parts.length === 0) return Promise.resolve([]);
  return query<QueuedHostJobRow>(
    em,
    `select distinct on (priority, created_at, id) id, kind, workspace_id, gpu_type, gpu_count, memory_bytes, toolchain, region, service
     from (${parts.join(' union all ')}) q order by priority desc, created_at, id`,
    params,
  );
}

export type LockedQueuedJob = Pick<JobColumns, 'id' | 'subject_id' | 'payload' | 'attempts'>;

/**
 * Locks those of `jobIds` still queued and not locked by another dispatch; answers them with what their attempt runs
 * (read here, not with the queue: a dispatch reads hundreds of queued jobs for each it takes).
 */
export function lockQueuedJobs(em: EntityManager, jobIds: string[]): Promise<LockedQueuedJob[]> {
  return query<LockedQueuedJob>(
    em,
    `select id, subject_id, payload, attempts from jobs where id = any(?::text[]) and status = 'queued' for update skip locked`,
    [pgArray(jobIds)],
  );
}

/** The host jobs among `jobIds`, locked for the caller's transaction (a reconnecting host's reconciliation). */
export function lockHostJobs(
  em: EntityManager,
  jobIds: string[],
): Promise<Array<{ id: string; attempts: number; status: string; host_id: string | null; cancel_requested: boolean }>> {
  return query<{ id: string; attempts: number; status: string; host_id: string | null; cancel_requested: boolean }>(
    em,
    `select id, attempts, status, host_id, cancel_requested from jobs where id = any(?::text[]) and placement = 'host' for update`,
    [pgArray(jobIds)],
  );
}

/** What an ended job's bookkeeping charges: its error and run seconds. */
export async function jobErrorAndRunSeconds(
  em: EntityManager,
  jobId: string,
): Promise<{ error: string | null; seconds: number | null } | undefined> {
  const [job] = await query<{ error: string | null; seconds: number | null }>(
    em,
    'select error, run_seconds as seconds from jobs where id = ?',
    [jobId],
  );
  return job;
}

/** Whether a user asked the job to stop (a trainer hears it in its next webhook answer); undefined for no such job. */
export async function cancelRequested(
  em: EntityManager,
  jobId: string,
): Promise<{ cancel_requested: boolean } | undefined> {
  const [job] = await query<{ cancel_requested: boolean }>(em, 'select cancel_requested from jobs where id = ?', [
    jobId,
  ]);
  return job;
}

/** A running training job's progress, from its trainer's reports: `done` of `epochs` epochs. */
export async function recordTrainingProgress(
  em: EntityManager,
  jobId: string,
  done: number,
  epochs: number | null | undefined,
): Promise<void> {
  const percent = epochs ? Math.round((1000 * done) / epochs) / 10 : 0;
  await query(
    em,
    `update jobs set progress = jsonb_build_object('stage', 'training', 'percent', ?::numeric, 'processed', ?::int, 'total', ?::int), updated_at = now()
       where id = ? and status = 'running'`,
    [percent, done, epochs ?? 0, jobId],
  );
}

/** A job's error (null while it has none); undefined for no such job. */
export async function jobError(em: EntityManager, jobId: string): Promise<{ error: string | null } | undefined> {
  const [job] = await query<{ error: string | null }>(em, 'select error from jobs where id = ?', [jobId]);
  return job;
}

/** Whether the job runs now on the host. */
export async function isRunningOnHost(em: EntityManager, jobId: string, hostId: string): Promise<boolean> {
  const [running] = await query(em, `select 1 from jobs where id = ? and host_id = ? and status = 'running'`, [
    jobId,
    hostId,
  ]);
  return Boolean(running);
}

/** Whether the job runs now, in this attempt (a job taken again after its process died runs in a later one). */
export async function isRunningAttempt(em: EntityManager, jobId: string, attempt: number): Promise<boolean> {
  const [running] = await query(em, `select 1 from jobs where id = ? and status = 'running' and attempts = ?`, [
    jobId,
    attempt,
  ]);
  return Boolean(running);
}

/** The attempt each of `jobIds` runs now (null when it does not run); jobs this database does not know are left out. */
export function runningAttempts(
  em: EntityManager,
  jobIds: string[],
): Promise<Array<{ id: string; running_attempt: number | null }>> {
  return query<{ id: string; running_attempt: number | null }>(
    em,
    `select id, case when status = 'running' then attempts end as running_attempt from jobs where id = any(?::text[])`,
    [pgArray(jobIds)],
  );
}

/**
 * Those of `jobIds` that ended, and, with `staleQueued`, those still queued after `queuedSeconds`; the ended in the
 * order they finished, after the queued ones.
 */
export function endedOrStaleQueuedJobs(
  em: EntityManager,
  jobIds: string[],
  staleQueued: boolean,
  queuedSeconds: number,
): Promise<Array<{ id: string; status: string; error: string | null }>> {
  return query<{ id: string; status: string; error: string | null }>(
    em,
    `select id, status, error from jobs where id = any(?::text[])
             and (status in ('completed', 'failed', 'cancelled') or (? and status = 'queued' and created_at < now() - make_interval(secs => ?)))
           order by finished_at nulls first`,
    [pgArray(jobIds), staleQueued, queuedSeconds],
  );
}

/** The ids of the jobs running on each of `hostIds`, oldest first; with `workspaceId`, only that workspace's. */
export function runningJobsOfHosts(
  em: EntityManager,
  hostIds: string[],
  workspaceId: string | null,
): Promise<Array<{ host_id: string; id: string }>> {
  return query<{ host_id: string; id: string }>(
    em,
    `select host_id, id from jobs where host_id = any(?::text[]) and status = 'running' and (?::text is null or workspace_id = ?) order by started_at, id`,
    [pgArray(hostIds), workspaceId, workspaceId],
  );
}

// --- A subject's active job (queued or running) of a kind. ---

/** Whether a job of `kind` on the subject is queued or running. */
export async function hasActiveJob(em: EntityManager, kind: string, subjectId: string): Promise<boolean> {
  const [busy] = await query(
    em,
    `select 1 from jobs where kind = ? and subject_id = ? and status in ('queued', 'running') limit 1`,
    [kind, subjectId],
  );
  return Boolean(busy);
}

/** One of `subjectIds` with a job of `kind` queued or running; undefined when none has. */
export async function subjectWithActiveJob(
  em: EntityManager,
  kind: string,
  subjectIds: string[],
): Promise<{ subject_id: string } | undefined> {
  const [busy] = await query<{ subject_id: string }>(
    em,
    `select subject_id from jobs where kind = ? and subject_id = any(?::text[]) and status in ('queued', 'running') limit 1`,
    [kind, pgArray(subjectIds)],
  );
  return busy;
}

/** The id of the subject's queued or running job of `kind`. */
export async function activeJobId(
  em: EntityManager,
  subjectId: string,
  kind: string,
): Promise<{ id: string } | undefined> {
  const [active] = await query<{ id: string }>(
    em,
    "select id from jobs where subject_id = ? and kind = ? and status in ('queued', 'running') limit 1",
    [subjectId, kind],
  );
  return active;
}

/** The progress of the subject's oldest queued or running job of `kind`; undefined when none is. */
export async function activeJobProgress(
  em: EntityManager,
  subjectId: string,
  kind: string,
): Promise<{ progress: JobProgress | null } | undefined> {
  const [job] = await query<{ progress: JobProgress | null }>(
    em,
    `select progress from jobs where subject_id = ? and kind = ? and status in ('queued', 'running') order by created_at limit 1`,
    [subjectId, kind],
  );
  return job;
}

// --- Control-plane jobs (JobRunner): held by their lease owner. ---

export async function recordHeldProgress(
  em: EntityManager,
  jobId: string,
  owner: string,
  progress: JobProgress,
): Promise<void> {
  await query(em, 'update jobs set progress = ?::jsonb, updated_at = now() where id = ? and lease_owner = ?', [
    JSON.stringify(progress),
    jobId,
    owner,
  ]);
}

/** Locks the job while `owner` still holds it running; undefined when it does not. */
export async function lockHeldJob(
  em: EntityManager,
  jobId: string,
  owner: string,
): Promise<{ cancel_requested: boolean } | undefined> {
  const [row] = await query<{ cancel_requested: boolean }>(
    em,
    `select cancel_requested from jobs where id = ? and lease_owner = ? and status = 'running' for update`,
    [jobId, owner],
  );
  return row;
}

/** Extends the lease `owner` holds; undefined when it no longer holds the job. */
export async function renewHeldLease(
  em: EntityManager,
  jobId: string,
  owner: string,
  leaseSeconds: number,
): Promise<{ cancel_requested: boolean } | undefined> {
  const [row] = await query<{ cancel_requested: boolean }>(
    em,
    `update jobs set lease_expires_at = now() + make_interval(secs => ?) where id = ? and lease_owner = ? and status = 'running' returning cancel_requested`,
    [leaseSeconds, jobId, owner],
  );
  return row;
}

/** Wakes every replica's runner for `kind`, once the caller's transaction commits. */
export async function notifyJobQueued(em: EntityManager, kind: string): Promise<void> {
  await query(em, `select pg_notify('${JOBS_CHANNEL}', ?)`, [kind]);
}

/** Where a page of a workspace's jobs starts: after this job of the previous page (newest first). */
export interface JobCursor {
  createdAt: Date;
  id: string;
}

/** A page of the workspace's jobs, newest first, with the host each runs on. */
export function workspaceJobs(
  em: EntityManager,
  workspaceId: string,
  filter: { statuses?: readonly JobStatus[]; kind?: string; after?: JobCursor; limit: number },
): Promise<Job[]> {
  const { statuses, kind, after, limit } = filter;
  return em.find(
    Job,
    {
      workspace: workspaceId,
      ...(statuses && { status: { $in: [...statuses] } }),
      ...(kind && { kind }),
      ...(after && {
        $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }],
      }),
    },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit, populate: ['host'] },
  );
}

/** Jobs queued or running by kind and status (the metrics' queue figures): the status index, not the whole table. */
export function activeJobCounts(em: EntityManager): Promise<Array<{ kind: string; status: string; n: number }>> {
  return query(
    em,
    `select kind, status, count(*)::int as n from jobs where status in ('queued', 'running') group by kind, status`,
  );
}

/** Waiting jobs by kind and GPU type (null: none asked for), with how long the oldest has waited. */
export function queuedJobAges(
  em: EntityManager,
): Promise<Array<{ kind: string; gpu_type: string | null; n: number; oldest_seconds: number }>> {
  return query(
    em,
    `select kind, gpu_type, count(*)::int as n, extract(epoch from now() - min(created_at))::float8 as oldest_seconds
     from jobs where status = 'queued' group by kind, gpu_type`,
  );
}
