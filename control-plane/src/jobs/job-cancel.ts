import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL, SETTLE_JOBS } from './job-queue.ts';

/**
 * Asks a job to stop: a queued one is cancelled at once; a running one keeps running until whatever runs it sees
 * the request (every replica is told). Null when the job had already ended.
 */
export async function requestCancel(em: EntityManager, jobId: string): Promise<'cancelled' | 'running' | null> {
  const [row] = await query<{ status: 'cancelled' | 'running'; settle_pending: boolean }>(
    em,
    `update jobs set cancel_requested = true, updated_at = now(),
       status = case when status = 'queued' then 'cancelled' else status end,
       finished_at = case when status = 'queued' then now() else finished_at end,
       error = case when status = 'queued' then 'Cancelled' else error end,
       settle_pending = settle_pending or (status = 'queued' and placement = 'host')
     where id = ? and status in ('queued', 'running') returning status, settle_pending`,
    [jobId],
  );
  if (row?.status === 'running') await query(em, `select pg_notify('${JOB_CANCEL_CHANNEL}', ?)`, [jobId]);
  // A host job cancelled before it ran still gets its kind's bookkeeping (a training's model is left cancelled).
  else if (row?.settle_pending) await query(em, `select pg_notify('${JOBS_CHANNEL}', '${SETTLE_JOBS}')`);
  return row?.status ?? null;
}
