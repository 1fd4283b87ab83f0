import type { EntityManager } from '@mikro-orm/postgresql';
import { bearerToken } from '../auth/key-format.ts';
import { Conflict, NotFound, Unauthorized } from '../http/errors.ts';
import { findWorkerByKey } from '../hosts/worker-key-lookup.ts';
import { runningJobOfHost } from '../jobs/job.store.ts';

export interface RunningAttempt {
  workspaceId: string;
  subjectId: string | null;
}

/**
 * The job a worker host uploads a file of: it must run on the worker key's host (401 without a valid key, 404
 * otherwise), as the attempt the agent names (409 for an attempt that is not the current one), and be of `kind`
 * when one is given. `lock`: held until the transaction ends, so the job cannot end or move meanwhile.
 */
export async function runningAttempt(
  em: EntityManager,
  authorization: string | undefined,
  job: { id: string; attempt: number; kind?: string },
  lock = false,
): Promise<RunningAttempt> {
  const worker = await findWorkerByKey(em, bearerToken(authorization) ?? '');
  if (!worker) throw Unauthorized('A worker key is required');
  const row = await runningJobOfHost(em, job.id, worker.hostId, job.kind, lock);
  if (!row) throw NotFound(`No running ${job.kind === undefined ? '' : `${job.kind} `}job ${job.id} on this host`);
  if (row.attempts !== job.attempt) throw Conflict(`Attempt ${job.attempt} is no longer the job's current attempt`);
  return { workspaceId: row.workspace_id, subjectId: row.subject_id };
}
