import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { JOB_CANCEL_CHANNEL } from './job-queue.ts';

/**
 * Asks a job to stop: a queued one is cancelled at once; a running one keeps running until whatever runs it sees
 * the request (every replica is told). Null when the job had already ended.
 */
export async function requestCancel(em: EntityManager, jobId: string): Promise<'cancelled' | 'running' | null> {
  const [row] = await query<{ status: 'cancelled' | 'running' }>(
    em,
    `update jobs set cancel_requested = true, updated_at = now(),
       status = case when status = 'queued' then 'cancelled' else status end,
       finished_at = case when status = 'queued' then now() else finished_at end,
       error = case when status = 'queued' then 'Cancelled' else error end
     where id = ? and status in ('queued', 'running') returning status`,
    [jobId],
  );
  if (row?.status === 'running') await query(em, `select pg_notify('${JOB_CANCEL_CHANNEL}', ?)`, [jobId]);
  return row?.status ?? null;
}

/** A training job cancelled before it ran leaves its model as it would have after a cancelled run. */
export async function settleQueuedTraining(em: EntityManager, modelId: string): Promise<void> {
  await query(em, `update models set status = 'cancelled', completed_at = now(), updated_at = now() where id = ? and status = 'training'`, [modelId]);
}
