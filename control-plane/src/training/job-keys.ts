import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey, type JobScope } from '../auth/api-key.entity.ts';
import { deleteJobKeys } from '../auth/api-key.store.ts';
import { announceAuthChange } from '../auth/authenticator.ts';
import { displayPrefix, generateApiKey, hashApiKey } from '../auth/key-format.ts';

/** A job key outlives no job, but a job that is never closed (its database gone) must not leave a key forever. */
const JOB_KEY_DAYS = 14;

/**
 * Mints the API key the trainer of one job attempt reports with: the workspace's and acting user's, limited to the
 * job's resources (JobScope). Earlier attempts' keys die with it.
 */
export async function mintJobKey(
  em: EntityManager,
  input: { workspaceId: string; userId: string; scope: JobScope },
): Promise<string> {
  await revokeJobKeys(em, input.scope.jobId);
  const key = generateApiKey();
  em.create(ApiKey, {
    workspace: input.workspaceId,
    user: input.userId,
    name: `training job ${input.scope.jobId}`,
    keyHash: hashApiKey(key),
    prefix: displayPrefix(key),
    jobScope: input.scope,
    expiresAt: new Date(Date.now() + JOB_KEY_DAYS * 86_400_000),
  });
  await em.flush();
  return key;
}

/** Deletes the job's keys and tells every replica, so a cached key stops at once. */
export async function revokeJobKeys(em: EntityManager, jobId: string): Promise<void> {
  const removed = await deleteJobKeys(em, jobId);
  if (removed.length > 0) await announceAuthChange(em);
}
