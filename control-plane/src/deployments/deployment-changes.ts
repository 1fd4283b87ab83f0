// Announces that a deployment's serving state changed (its status, its live revision, its server's URL, its deletion),
// so that the routers' memories of live servers (DeploymentUpstreams) are dropped: every replica's through
// DEPLOYMENTS_CHANNEL at the change's commit, and this process's at once.
import { EventEmitter } from 'node:events';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notifyChannel } from '../db/notify.ts';

export const DEPLOYMENTS_CHANNEL = 'vp_deployments_changed';

const localChanges = new EventEmitter().setMaxListeners(0);

/** Inside the changing transaction: NOTIFY at its commit, and this process's routers told now. */
export async function announceDeploymentChange(em: EntityManager): Promise<void> {
  await notifyChannel(em, DEPLOYMENTS_CHANNEL);
  localChanges.emit('change');
}

/** Calls `listener` on every change announced in this process; returns how to stop. */
export function onLocalDeploymentChange(listener: () => void): () => void {
  localChanges.on('change', listener);
  return () => localChanges.off('change', listener);
}
