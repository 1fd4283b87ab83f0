// The control_plane_replicas table: one row per running control-plane process (its host name, version and signing
// secret's fingerprint), updated every minute while it runs.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

export interface ReplicaRow {
  hostname: string;
  version: string;
  secret_fingerprint: string;
}

/** Records the replica as seen now: an upsert, so a row removed meanwhile (by a restore, by hand) comes back. */
export async function recordReplicaSeen(
  em: EntityManager,
  replica: { id: string } & Pick<ReplicaRow, 'hostname' | 'version'> & { secretFingerprint: string },
): Promise<void> {
  await query(
    em,
    `insert into control_plane_replicas (id, hostname, version, secret_fingerprint) values (?, ?, ?, ?)
       on conflict (id) do update set seen_at = now()`,
    [replica.id, replica.hostname, replica.version, replica.secretFingerprint],
  );
}

/** Drops the rows of replicas unseen for that many hours (stopped without removing theirs). */
export async function forgetReplicasUnseenFor(em: EntityManager, hours: number): Promise<void> {
  await query(em, 'delete from control_plane_replicas where seen_at < now() - make_interval(hours => ?)', [hours]);
}

/** Removes the replica's row. */
export async function removeReplica(em: EntityManager, id: string): Promise<void> {
  await query(em, 'delete from control_plane_replicas where id = ?', [id]);
}

/** The replicas seen in the last `seconds`, oldest started first. */
export async function replicasSeenWithin(em: EntityManager, seconds: number): Promise<ReplicaRow[]> {
  return query<ReplicaRow>(
    em,
    'select hostname, version, secret_fingerprint from control_plane_replicas where seen_at > now() - make_interval(secs => ?) order by started_at',
    [seconds],
  );
}
