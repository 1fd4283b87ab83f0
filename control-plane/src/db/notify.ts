// Cross-replica announcements: a NOTIFY on a channel that db/notifications.ts listens to on every replica.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from './sql.ts';

/** NOTIFYs `channel` with `payload`: inside the EntityManager's transaction at its commit, outside one at once. */
export async function notifyChannel(em: EntityManager, channel: string, payload = ''): Promise<void> {
  await query(em, 'select pg_notify(?, ?)', [channel, payload]);
}
