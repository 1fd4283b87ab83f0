import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray } from '../db/sql.ts';
import { lockHostJobs, renewHostLeases } from '../jobs/job.store.ts';
import type { ChangedJob, JobLifecycle } from '../jobs/job-lifecycle.ts';

export interface ReportedJob {
  jobId: string;
  attempt: number;
  gpuIndexes?: number[];
}

export interface Reconciled {
  /** Jobs the host must stop: no longer its to run, or cancelled while it was away. */
  cancel: string[];
  /** Jobs the database gave up on because the host came back without them. */
  released: ChangedJob[];
}

/**
 * Squares the database with what a (re)connecting host says it runs. Its jobs it no longer has are released
 * (requeued or failed); jobs it still runs stay its own, leases renewed; a job released meanwhile that nobody
 * else took yet (back in the queue since this attempt) is taken back rather than run twice; anything else it runs
 * is stopped.
 */
export async function reconcileHost(
  em: EntityManager,
  lifecycle: JobLifecycle,
  hostId: string,
  reported: ReportedJob[],
  graceSeconds: number,
): Promise<Reconciled> {
  return em.transactional(async (tx) => {
    const ids = reported.map((job) => job.jobId);
    const released = await lifecycle.release(
      tx,
      'j.host_id = ? and not (j.id = any(?::text[]))',
      [hostId, pgArray(ids)],
      'The host restarted without the job',
    );
    const known = await lockHostJobs(tx, ids);
    const byId = new Map(known.map((row) => [row.id, row]));
    const cancel: string[] = [];
    for (const job of reported) {
      const row = byId.get(job.jobId);
      const ours = row?.status === 'running' && row.host_id === hostId && row.attempts === job.attempt;
      // Back in the queue since this attempt: requeued as it was (it had been accepted), or one attempt back (its
      // acceptance never arrived, so the release counted it as never tried; the host running it confirms it now).
      const reclaimable =
        row?.status === 'queued' &&
        (row.attempts === job.attempt || row.attempts === job.attempt - 1) &&
        !row.cancel_requested;
      if (ours && !row.cancel_requested) continue;
      if (reclaimable) {
        await lifecycle.reclaim(tx, job.jobId, hostId, job.attempt, job.gpuIndexes ?? [], graceSeconds);
        continue;
      }
      cancel.push(job.jobId);
    }
    await renewHostLeases(tx, hostId, graceSeconds);
    return { cancel, released };
  });
}
