// The deployment's status machine: every statement that changes a deployment's status is here (DEPLOYMENT_TRANSITIONS
// lists the moves). A move is one guarded UPDATE … WHERE status = any(allowed from) RETURNING: a refused one changes
// nothing, logs nothing, and says so (false). Its callers (deployment-rollout.ts, the service, the sweep, the router's
// wake) hold the deployment's row lock, so what they read of it still holds when they move it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { announceDeploymentChange } from './deployment-changes.ts';
import { appendEvent, type Severity } from './deployment-events.store.ts';
import { DEPLOYMENT_STATUSES, type DeploymentStatus } from './deployment.schemas.ts';

/**
 * The moves a deployment's status may make, as the code makes them:
 *
 * - creating → creating: its creation, logged (the row is inserted creating).
 * - creating → deploying: its first revision's job is queued (deployment-rollout.ts queueRevisionJob).
 * - ready | stopped | failed → deploying: a rollout (replace or resize a ready one; start a stopped or failed one);
 *   ready → deploying also when the host of its live revision was lost (the sweep).
 * - deploying | ready | failed → ready: a starting revision went live (ready: one woken from zero; failed: a replacement
 *   that outlived the live server); a restarted live revision serves again; a failed replacement rolled back to the
 *   live revision.
 * - creating | deploying | ready | failed → failed: a starting revision failed with no live one to fall back on, the
 *   live server stopped, a wake from zero could not start.
 * - anything but stopped → stopping: a stop (stopping again: stop asked twice).
 * - stopping → stopped: every server of a stopping deployment stopped.
 */
export const DEPLOYMENT_TRANSITIONS: Readonly<Record<DeploymentStatus, readonly DeploymentStatus[]>> = {
  creating: ['creating', 'deploying', 'failed', 'stopping'],
  deploying: ['ready', 'failed', 'stopping'],
  ready: ['deploying', 'ready', 'failed', 'stopping'],
  stopping: ['stopping', 'stopped'],
  stopped: ['deploying'],
  failed: ['deploying', 'ready', 'failed', 'stopping'],
};

/** The statuses a deployment may move to `to` from. */
export function deploymentStatusesBefore(to: DeploymentStatus): DeploymentStatus[] {
  return DEPLOYMENT_STATUSES.filter((from) => DEPLOYMENT_TRANSITIONS[from].includes(to));
}

export interface StatusEvent {
  message: string;
  severity?: Severity;
  statusMessage?: string | null;
}

/**
 * Moves the deployment to `status` (its message set) and logs the change. `only` narrows the statuses it may move from
 * (the caller's own precondition); the move must also be one DEPLOYMENT_TRANSITIONS lists. False: refused (the
 * deployment is gone or in another status), nothing changed and nothing was logged.
 */
export async function changeStatus(
  em: EntityManager,
  deploymentId: string,
  status: DeploymentStatus,
  event: StatusEvent,
  only?: readonly DeploymentStatus[],
): Promise<boolean> {
  const from = deploymentStatusesBefore(status).filter((allowed) => !only || only.includes(allowed));
  const [moved] = await query<{ id: string }>(
    em,
    `update deployments set status = ?, status_message = ?, updated_at = now() where id = ? and status = any(?::text[]) returning id`,
    [status, event.statusMessage ?? null, deploymentId, `{${from.join(',')}}`],
  );
  if (!moved) return false;
  await announceDeploymentChange(em);
  await appendEvent(em, deploymentId, event.severity ?? 'INFO', `${status}: ${event.message}`);
  return true;
}
