// The worker_keys table's hand-written SQL (keys are issued and revoked through the ORM's WorkerKey entity in
// host.service.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** The host a worker key's hash belongs to, with the key's display prefix. */
export async function hostOfWorkerKeyHash(
  em: EntityManager,
  keyHash: string,
): Promise<{ host_id: string; name: string; workspace_id: string | null; prefix: string } | undefined> {
  const [row] = await query<{ host_id: string; name: string; workspace_id: string | null; prefix: string }>(
    em,
    'select h.id as host_id, h.name, h.workspace_id, k.prefix from worker_keys k join hosts h on h.id = k.host_id where k.key_hash = ?',
    [keyHash],
  );
  return row;
}
