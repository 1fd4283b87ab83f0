import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { releaseLostJobs, type EndedJob } from './host-job-store.ts';

export interface ReportedJob {
  jobId: string;
  attempt: number;
  gpuIndexes?: number[];
}

export interface Reconciled {
  /** Jobs the host must stop: no longer its to run, or cancelled while it was away. */
  cancel: string[];
  /** Jobs the database gave up on because the host came back without them. */
  released: EndedJob[];
}

/**
 * Squares the database with what a (re)connecting host says it runs. Its jobs it no longer has are released
 * (requeued or failed); jobs it still runs stay its own, leases renewed; a job released meanwhile that nobody
 * else took yet (same attempt, back in the queue) is taken back rather than run twice; anything else it runs
 * is stopped.
 */
export async function reconcileHost(em: EntityManager, hostId: string, reported: ReportedJob[], graceSeconds: number): Promise<Reconciled> {
  return em.transactional(async (tx) => {
    const ids = reported.map((job) => job.jobId);
    const released = await releaseLostJobs(tx, 'j.host_id = ? and not (j.id = any(?::text[]))', [hostId, pgArray(ids)], 'The host restarted without the job');
    const known = await query<{ id: string; attempts: number; status: string; host_id: string | null; cancel_requested: boolean }>(
      tx,
      `select id, attempts, status, host_id, cancel_requested from jobs where id = any(?::text[]) and placement = 'host' for update`,
      [pgArray(ids)],
    );
    const byId = new Map(known.map((row) => [row.id, row]));
    const cancel: string[] = [];
    for (const job of reported) {
      const row = byId.get(job.jobId);
      const ours = row?.status === 'running' && row.host_id === hostId && row.attempts === job.attempt;
      const reclaimable = row?.status === 'queued' && row.attempts === job.attempt && !row.cancel_requested;
      if (ours && !row.cancel_requested) continue;
      if (reclaimable) {
        await query(
          tx,
          `update jobs set status = 'running', host_id = ?, gpu_indexes = ?::jsonb, accepted_at = now(), finished_at = null,
             lease_expires_at = now() + make_interval(secs => ?), progress = '{"stage":"running"}'::jsonb, updated_at = now() where id = ?`,
          [hostId, JSON.stringify(job.gpuIndexes ?? []), graceSeconds, job.jobId],
        );
        continue;
      }
      cancel.push(job.jobId);
    }
    await query(tx, `update jobs set lease_expires_at = now() + make_interval(secs => ?) where host_id = ? and status = 'running'`, [graceSeconds, hostId]);
    return { cancel, released };
  });
}
