// Each control-plane process records itself in control_plane_replicas while it runs, so an operator's tool
// (`vpctl doctor`) can tell which replicas run, on which version, and whether they share the signing secret.
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { newId } from '../db/ids.ts';
import { RELEASE_VERSION } from '../release-version.ts';
import { forgetReplicasUnseenFor, recordReplicaSeen, removeReplica } from './replica.store.ts';

/** How often a replica says it still runs; one unseen for three of these has stopped. */
export const REPLICA_SEEN_SECONDS = 60;
export const REPLICA_GONE_SECONDS = 3 * REPLICA_SEEN_SECONDS;
/** Rows of replicas that stopped without removing theirs (killed) are dropped after this long. */
const FORGOTTEN_AFTER_HOURS = 24;

/**
 * Identifies a signing secret without revealing it: 64 bits of a salted SHA-256. Enough to tell two secrets
 * apart; too little, with the 32-character minimum, to recover one.
 */
export function secretFingerprint(secret: string): string {
  return createHash('sha256').update(`vp-signing-secret\0${secret}`).digest('hex').slice(0, 16);
}

export interface ReplicaRecord {
  /** Stops the minutely update and removes the row. */
  stop(): Promise<void>;
}

/** Records this process as a running replica until `stop()`; failures to update are logged, never fatal. */
export async function recordReplica(fork: () => EntityManager, secret: string, log: Logger): Promise<ReplicaRecord> {
  const id = newId();
  // An upsert, so a row removed meanwhile (by a restore, by hand) comes back at the next minute.
  const seen = () =>
    recordReplicaSeen(fork(), {
      id,
      hostname: hostname().slice(0, 255),
      version: RELEASE_VERSION,
      secretFingerprint: secretFingerprint(secret),
    });
  await forgetReplicasUnseenFor(fork(), FORGOTTEN_AFTER_HOURS);
  await seen();
  const timer = setInterval(
    () => void seen().catch((error) => log.warn({ err: error }, 'recording this replica failed')),
    REPLICA_SEEN_SECONDS * 1000,
  );
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await removeReplica(fork(), id).catch((error) => log.warn({ err: error }, 'removing this replica failed'));
    },
  };
}
