import type { EntityManager } from '@mikro-orm/postgresql';
import { notifyChannel } from '../db/notify.ts';
import { WORKER_KEY_PATTERN, hashSecret } from './worker-key-format.ts';
import { hostOfWorkerKeyHash } from './worker-key.store.ts';

/** Announced with the host id whenever a host's key is revoked, so the socket layer can drop that host's connection. */
export const WORKER_KEYS_CHANNEL = 'vp_worker_keys_changed';

export interface WorkerIdentity {
  hostId: string;
  hostName: string;
  /** Null for a host of the appliance-wide pool. */
  workspaceId: string | null;
  keyPrefix: string;
}

/**
 * The host a worker key belongs to, or null. Not cached: it runs once per socket handshake, so a
 * revoked (deleted) key is refused on the very next attempt. Only worker_keys is searched, and an
 * API key never matches the pattern.
 */
export async function findWorkerByKey(em: EntityManager, key: string): Promise<WorkerIdentity | null> {
  if (!WORKER_KEY_PATTERN.test(key)) return null;
  const row = await hostOfWorkerKeyHash(em, hashSecret(key));
  return row ? { hostId: row.host_id, hostName: row.name, workspaceId: row.workspace_id, keyPrefix: row.prefix } : null;
}

export async function announceWorkerKeyChange(em: EntityManager, hostId: string): Promise<void> {
  await notifyChannel(em, WORKER_KEYS_CHANNEL, hostId);
}
