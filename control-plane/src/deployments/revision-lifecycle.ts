// A deployment revision's state machine: every statement that changes a revision's state is here (REVISION_TRANSITIONS
// lists the moves). A move is one guarded UPDATE … WHERE state = any(allowed from) RETURNING: a refused one changes
// nothing and says so (false). deployment-rollout.ts makes the moves, under the deployment's row lock.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { announceDeploymentChange } from './deployment-changes.ts';
import type { RevisionState } from './deployment-revision.store.ts';

export const REVISION_STATES = ['starting', 'live', 'retired', 'failed'] as const satisfies readonly RevisionState[];

/**
 * The moves a revision's state may make:
 *
 * - starting → live: its server answered its health check; it takes the traffic.
 * - live → live: restarted on another host (or reconnected), its server reported again (its live clock starts again).
 * - starting | live → retired: replaced, stopped, scaled to zero or deleted.
 * - starting | live → failed: its job ended, its export failed, its server never answered in time.
 * - retired and failed are final.
 */
export const REVISION_TRANSITIONS: Readonly<Record<RevisionState, readonly RevisionState[]>> = {
  starting: ['live', 'retired', 'failed'],
  live: ['live', 'retired', 'failed'],
  retired: [],
  failed: [],
};

/** The states a revision may move to `to` from. */
export function revisionStatesBefore(to: RevisionState): RevisionState[] {
  return REVISION_STATES.filter((from) => REVISION_TRANSITIONS[from].includes(to));
}

/**
 * live: it takes traffic now; retired or failed: it is done (failed with the reason). False: refused (the revision is
 * gone or its state allows no such move), nothing changed.
 */
export async function changeRevisionState(
  em: EntityManager,
  id: string,
  state: RevisionState,
  error: string | null = null,
): Promise<boolean> {
  const [moved] = await query<{ id: string }>(
    em,
    `update deployment_revisions set state = ?, error = coalesce(?, error),
       live_at = case when ? = 'live' then now() else live_at end,
       retired_at = case when ? in ('retired', 'failed') then now() else retired_at end
     where id = ? and state = any(?::text[]) returning id`,
    [state, error, state, state, id, `{${revisionStatesBefore(state).join(',')}}`],
  );
  if (!moved) return false;
  await announceDeploymentChange(em);
  return true;
}
