// The scheduler's SQL over the jobs table: a host job's life after it is queued. Every statement is guarded by
// the job's host and status, so a message from a host that no longer holds the job changes nothing.
import type { EntityManager } from '@mikro-orm/postgresql';
import { announceAuthChange } from '../auth/authenticator.ts';
import { pgArray, query } from '../db/sql.ts';
import { JOBS_CHANNEL } from '../jobs/job-queue.ts';
import type { HostJobOutcome } from './host-job-kinds.ts';

/** The seconds the current attempt ran on its host, from the host's confirmation (none before it) to now. */
const RAN_SINCE_ACCEPTED = 'coalesce(greatest(extract(epoch from now() - j.accepted_at), 0), 0)';
/** The same for an attempt whose host was lost: only until the host was last heard from, not through the grace period. */
const RAN_UNTIL_LAST_HEARD = `coalesce(greatest(extract(epoch from least(now(),
  coalesce((select h.last_heartbeat_at from hosts h where h.id = j.host_id), now())) - j.accepted_at), 0), 0)`;

/** JOBS_CHANNEL payload when lost host jobs went back to the queue. */
export const REQUEUED_HOST_JOBS = 'requeued';

/** Log lines kept per job; later ones are dropped (one marker line says so). */
export const MAX_JOB_LOG_LINES = 100_000;

export interface EndedJob {
  id: string;
  kind: string;
  status: HostJobOutcome | 'queued';
}

/**
 * Lets go of running host jobs whose host lost them (`where` selects them, on alias j). An assignment the host
 * never confirmed goes back to the queue as if never tried; a cancel request ends as cancelled; a restartable
 * job with attempts left is requeued; anything else fails with `reason`. Returns what became of each.
 */
export async function releaseLostJobs(em: EntityManager, where: string, params: unknown[], reason: string): Promise<EndedJob[]> {
  const released = await query<EndedJob>(
    em,
    `with lost as (select j.id from jobs j where j.placement = 'host' and j.status = 'running' and (${where}) for update skip locked),
     decided as (
       select j.id, case when j.cancel_requested then 'cancelled'
                         when j.accepted_at is null or (j.restartable and j.attempts < j.max_attempts) then 'queued'
                         else 'failed' end as next
       from jobs j join lost using (id))
     update jobs j set status = d.next,
       attempts = case when j.accepted_at is null and d.next = 'queued' then j.attempts - 1 else j.attempts end,
       error = case d.next when 'cancelled' then 'Cancelled' when 'failed' then ? else null end,
       finished_at = case when d.next = 'queued' then null else now() end,
       progress = case when d.next = 'queued' then '{"stage":"queued","percent":0}'::jsonb else j.progress end,
       host_id = case when d.next = 'queued' then null else j.host_id end,
       settle_pending = d.next <> 'queued',
       run_seconds = j.run_seconds + ${RAN_UNTIL_LAST_HEARD},
       gpu_indexes = null, accepted_at = null, lease_expires_at = null, updated_at = now()
     from decided d where j.id = d.id
     returning j.id, j.kind, j.status`,
    [...params, reason],
  );
  if (released.some((job) => job.status === 'queued')) await query(em, `select pg_notify('${JOBS_CHANNEL}', '${REQUEUED_HOST_JOBS}')`);
  // A job key works only while its job runs: every replica's key cache must drop the released attempts' keys now.
  if (released.length > 0) await announceAuthChange(em);
  return released;
}

/** Host jobs whose lease (renewed by their host's heartbeats) ran out: the host has been gone too long. */
export function releaseExpiredJobs(em: EntityManager, graceSeconds: number): Promise<EndedJob[]> {
  return releaseLostJobs(em, 'j.lease_expires_at <= now()', [], `The host running the job was lost (no heartbeat for ${graceSeconds} s)`);
}

export async function renewHostLeases(em: EntityManager, hostId: string, graceSeconds: number): Promise<void> {
  await query(em, `update jobs set lease_expires_at = now() + make_interval(secs => ?) where host_id = ? and status = 'running'`, [graceSeconds, hostId]);
}

/** The host confirmed it started the job. Null: the job is not (or no longer) this host's to run. */
export async function markAccepted(em: EntityManager, hostId: string, jobId: string): Promise<{ cancelRequested: boolean } | null> {
  const [row] = await query<{ cancel_requested: boolean }>(
    em,
    `update jobs set accepted_at = coalesce(accepted_at, now()), progress = coalesce(progress, '{}'::jsonb) || '{"stage":"running"}'::jsonb, updated_at = now()
     where id = ? and host_id = ? and status = 'running' returning cancel_requested`,
    [jobId, hostId],
  );
  return row ? { cancelRequested: row.cancel_requested } : null;
}

export async function recordProgress(em: EntityManager, hostId: string, jobId: string, fraction: number): Promise<void> {
  await query(
    em,
    `update jobs set progress = jsonb_build_object('stage', 'running', 'percent', ?::numeric), updated_at = now() where id = ? and host_id = ? and status = 'running'`,
    [Math.round(fraction * 1000) / 10, jobId, hostId],
  );
}

/** Appends lines in order, up to MAX_JOB_LOG_LINES per job; false when the job is not this host's. */
export async function appendLogs(em: EntityManager, hostId: string, jobId: string, stream: string, lines: string[]): Promise<boolean> {
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
    const kept = lines.length <= room ? lines : [...lines.slice(0, room), `[log truncated: only the first ${MAX_JOB_LOG_LINES} lines are kept]`];
    await query(
      tx,
      `insert into job_logs (job_id, stream, line, at) select ?, ?, line, now() from unnest(?::text[]) with ordinality as l(line, n) order by n`,
      [jobId, stream, pgArray(kept)],
    );
    return true;
  });
}

/** The host reported the job's end (cancelled whatever the exit, once a user asked: a trainer stops cleanly). Null: it was not this host's running job (already released, say). */
export async function markFinished(
  em: EntityManager,
  hostId: string,
  finished: { jobId: string; outcome: HostJobOutcome; exitCode?: number; error?: string },
): Promise<EndedJob | null> {
  const [row] = await query<EndedJob>(
    em,
    `update jobs set status = case when cancel_requested then 'cancelled' else ? end,
       error = case when cancel_requested then 'Cancelled' when ? = 'completed' then null else ? end,
       result = case when ?::int is null then result else coalesce(result, '{}'::jsonb) || jsonb_build_object('exitCode', ?::int) end,
       progress = case when ? = 'completed' then jsonb_build_object('stage', 'done', 'percent', 100) else progress end,
       run_seconds = run_seconds + ${RAN_SINCE_ACCEPTED.replaceAll('j.', '')},
       finished_at = now(), lease_expires_at = null, gpu_indexes = null, settle_pending = true, updated_at = now()
     where id = ? and host_id = ? and status = 'running' returning id, kind, status`,
    [
      finished.outcome,
      finished.outcome,
      finished.error ?? `The job ${finished.outcome}`,
      finished.exitCode ?? null,
      finished.exitCode ?? null,
      finished.outcome,
      finished.jobId,
      hostId,
    ],
  );
  return row ?? null;
}
