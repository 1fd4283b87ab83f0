import type { EntityManager } from '@mikro-orm/postgresql';
import { WORKER_KEY_PATTERN, hashSecret } from './worker-key-format.ts';

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
  const rows = await em
    .getConnection()
    .execute<Array<{ host_id: string; name: string; workspace_id: string | null; prefix: string }>>(
      'select h.id as host_id, h.name, h.workspace_id, k.prefix from worker_keys k join hosts h on h.id = k.host_id where k.key_hash = ?',
      [hashSecret(key)],
    );
  const row = rows[0];
  return row ? { hostId: row.host_id, hostName: row.name, workspaceId: row.workspace_id, keyPrefix: row.prefix } : null;
}

export async function announceWorkerKeyChange(em: EntityManager, hostId: string): Promise<void> {
  await em.getConnection().execute('select pg_notify(?, ?)', [WORKER_KEYS_CHANNEL, hostId]);
}
