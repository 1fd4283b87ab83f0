// The host_folder_relay table: folder messages waiting for the replica (control-plane process) they are for,
// announced by a NOTIFY naming that replica.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** Leaves a message (JSON) for the replica. */
export async function enqueueRelayMessage(em: EntityManager, replica: string, payload: string): Promise<void> {
  await query(em, 'insert into host_folder_relay (replica, payload) values (?, ?)', [replica, payload]);
}

/** Tells listeners on the channel that the replica has messages waiting. */
export async function announceRelayMessages(em: EntityManager, channel: string, replica: string): Promise<void> {
  await query(em, 'select pg_notify(?, ?)', [channel, replica]);
}

/** Takes (deletes) the messages waiting for the replica; returns them, in no particular order. */
export async function takeRelayMessages(
  em: EntityManager,
  replica: string,
): Promise<Array<{ id: string; payload: string }>> {
  return query<{ id: string; payload: string }>(
    em,
    'delete from host_folder_relay where replica = ? returning id, payload',
    [replica],
  );
}

/** Drops messages older than `seconds` (left behind by a replica that went away). */
export async function dropStaleRelayMessages(em: EntityManager, seconds: number): Promise<void> {
  await query(em, `delete from host_folder_relay where created_at < now() - make_interval(secs => ?)`, [seconds]);
}
