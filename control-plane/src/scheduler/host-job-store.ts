// The scheduler's SQL over a running host job that leaves its status alone (leases, acceptance, progress, logs; status
// changes are jobs/job-lifecycle.ts's). Every statement is guarded by the job's host and status, so a message from a
// host that no longer holds the job changes nothing.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** Log lines kept per job; later ones are dropped (one marker line says so). */
export const MAX_JOB_LOG_LINES = 100_000;

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
