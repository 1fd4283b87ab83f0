// The checks of `vpctl doctor`, each one line: OK, WARN (works, but look) or FAIL (broken), and what to do.
import { existsSync, readFileSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { signingSecretFile, type AppConfig } from '@vp/config';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { appliedMigrationNames, databaseClockMs } from '../db/database-health.ts';
import { migrationState } from '../db/migration-state.ts';
import { agentOutdated } from '../hosts/agent-version.ts';
import { RELEASE_VERSION } from '../release-version.ts';
import type { BlobStore } from '../storage/blob-store.ts';
import { openBlobStore } from '../storage/store-from-config.ts';
import { hostAgentVersions, hostsWithLiveness } from '../workers/host.store.ts';
import { replicasSeenWithin } from './replica.store.ts';
import { REPLICA_GONE_SECONDS, secretFingerprint } from './replicas.ts';

export type CheckStatus = 'OK' | 'WARN' | 'FAIL';

export interface CheckResult {
  status: CheckStatus;
  check: string;
  message: string;
  /** What to do, for WARN and FAIL. */
  fix?: string;
}

const MIN_SECRET_LENGTH = 32;
const CLOCK_SKEW_WARN_SECONDS = 2;
const DISK_WARN_FRACTION = 0.1;
const DISK_WARN_BYTES = 5 * 2 ** 30;

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
/** A host as vpctl names it: `workspace/name`, or the name alone in the appliance-wide pool. */
const hostName = (host: { name: string; workspace: string | null }) =>
  host.workspace ? `${host.workspace}/${host.name}` : host.name;
const when = (value: string | null) =>
  value ? `last heartbeat ${new Date(value).toISOString().replace(/\.\d{3}Z$/, 'Z')}` : 'never connected';

/** The secret this environment signs with, without generating one (the control plane does that at its first start). */
export function ownSigningSecret(config: AppConfig): { secret?: string; source: string } {
  if (config.signingSecret) return { secret: config.signingSecret, source: 'SIGNING_SECRET' };
  const file = signingSecretFile(config);
  return existsSync(file) ? { secret: readFileSync(file, 'utf8').trim(), source: file } : { source: file };
}

export function signingSecretCheck(own: { secret?: string; source: string }): CheckResult {
  const check = 'signing secret';
  if (own.secret === undefined) {
    return {
      status: 'WARN',
      check,
      message: `SIGNING_SECRET is unset and ${own.source} does not exist yet`,
      fix: 'start the control plane (it generates one), or set SIGNING_SECRET',
    };
  }
  if (own.secret.length < MIN_SECRET_LENGTH) {
    return {
      status: 'FAIL',
      check,
      message: `the secret from ${own.source} has ${own.secret.length} characters; signed URLs need at least ${MIN_SECRET_LENGTH}`,
      fix: 'set SIGNING_SECRET to 32+ random characters (openssl rand -hex 32), the same on every replica, and restart them',
    };
  }
  return { status: 'OK', check, message: `from ${own.source}, ${own.secret.length} characters` };
}

export async function migrationsCheck(em: EntityManager): Promise<CheckResult> {
  const check = 'migrations';
  const executed = await appliedMigrationNames(em);
  const { pending, unknown } = migrationState(executed);
  if (unknown.length > 0) {
    return {
      status: 'FAIL',
      check,
      message: `the database was migrated by a newer version (${unknown.join(', ')})`,
      fix: "run that version's control plane and vpctl",
    };
  }
  if (pending.length > 0) {
    return {
      status: 'FAIL',
      check,
      message: `${pending.length} pending (${pending.join(', ')})`,
      fix: 'start the control plane (it migrates at start) or run `vpctl migrate`',
    };
  }
  return { status: 'OK', check, message: `all ${executed.length} applied` };
}

/** The database's clock against this machine's, the round trip's midpoint taken as the moment it was read. */
export async function clockCheck(em: EntityManager): Promise<CheckResult> {
  const check = 'clock';
  const before = Date.now();
  const databaseMs = await databaseClockMs(em);
  const skew = (Date.now() + before) / 2 - databaseMs;
  const seconds = Math.abs(skew) / 1000;
  const message = `this machine's clock is ${seconds.toFixed(2)} s ${skew >= 0 ? 'ahead of' : 'behind'} the database's`;
  if (seconds > CLOCK_SKEW_WARN_SECONDS) {
    return {
      status: 'WARN',
      check,
      message,
      fix: 'synchronise the clocks (NTP: timedatectl set-ntp true) here and on the database host; leases and signed URLs expire by them',
    };
  }
  return { status: 'OK', check, message };
}

/** The replicas seen in the last minutes, and whether they (and this environment) sign with one secret. */
export async function replicasCheck(em: EntityManager, ownSecret: string | undefined): Promise<CheckResult> {
  const check = 'replicas';
  const replicas = await replicasSeenWithin(em, REPLICA_GONE_SECONDS);
  if (replicas.length === 0) {
    return {
      status: 'WARN',
      check,
      message: `no control plane has reported in the last ${REPLICA_GONE_SECONDS / 60} minutes`,
      fix: 'start the appliance, or read its log for why it stopped',
    };
  }
  const where = replicas.map((replica) => `${replica.hostname} ${replica.version}`).join(', ');
  const secrets = new Set(replicas.map((replica) => replica.secret_fingerprint));
  if (secrets.size > 1) {
    return {
      status: 'FAIL',
      check,
      message: `${replicas.length} running sign with ${secrets.size} different secrets: ${where}; URLs one signs, another refuses`,
      fix: 'give every replica the same SIGNING_SECRET and restart them',
    };
  }
  if (ownSecret !== undefined && !secrets.has(secretFingerprint(ownSecret))) {
    return {
      status: 'WARN',
      check,
      message: `${replicas.length} running (${where}), but this environment's signing secret is not theirs`,
      fix: "run vpctl with the appliance's environment (its SIGNING_SECRET or DATA_DIR)",
    };
  }
  const versions = new Set(replicas.map((replica) => replica.version));
  if (versions.size > 1) {
    return {
      status: 'WARN',
      check,
      message: `${replicas.length} running on different versions: ${where}`,
      fix: 'finish the upgrade: restart the replicas on the older version',
    };
  }
  return { status: 'OK', check, message: `${replicas.length} running (${where}), one signing secret` };
}

/**
 * Hosts that are enrolled but have no live socket or heartbeat are lost; the scheduler gives up their jobs. With
 * `workspaceId`, only that workspace's hosts and the pool's (what its admins may know of); else every host.
 */
export async function hostsCheck(em: EntityManager, graceSeconds: number, workspaceId?: string): Promise<CheckResult> {
  const check = 'hosts';
  const hosts = await hostsWithLiveness(em, graceSeconds, workspaceId);
  if (hosts.length === 0) {
    return {
      status: 'WARN',
      check,
      message: 'no GPU hosts: training, exports and deployments need one',
      fix: 'vpctl hosts connect <name>, then enroll the host with the printed token',
    };
  }
  const lost = hosts.filter((host) => host.state !== 'enrolling' && !host.alive);
  const enrolling = hosts.filter((host) => host.state === 'enrolling');
  const connected = hosts.length - lost.length - enrolling.length;
  const waiting =
    enrolling.length > 0 ? `; ${enrolling.length} not enrolled yet (${enrolling.map(hostName).join(', ')})` : '';
  if (lost.length > 0) {
    return {
      status: 'WARN',
      check,
      message: `${lost.length} of ${hosts.length} lost: ${lost.map((host) => `${hostName(host)} (${when(host.last_heartbeat_at)})`).join(', ')}; ${connected} connected${waiting}`,
      fix: 'check the agent on each: systemctl status vp-worker; journalctl -u vp-worker',
    };
  }
  return { status: 'OK', check, message: `${connected} connected${waiting}` };
}

/**
 * Hosts whose agent last connected with another version than this control plane's release. Only a WARN: the worker
 * protocol spans versions, so an agent one release behind still works; the next appliance upgrade may strand it.
 * With `workspaceId`, only that workspace's hosts and the pool's; else every host.
 */
export async function agentVersionsCheck(
  em: EntityManager,
  serverUrl: string,
  workspaceId?: string,
): Promise<CheckResult> {
  const check = 'agent versions';
  const hosts = await hostAgentVersions(em, workspaceId);
  if (hosts.length === 0) return { status: 'OK', check, message: 'no agent has connected yet' };
  const outdated = hosts.filter((host) => agentOutdated(host.agent_version));
  if (outdated.length === 0)
    return { status: 'OK', check, message: `${hosts.length} on ${RELEASE_VERSION}, the control plane's` };
  return {
    status: 'WARN',
    check,
    message: `${outdated.length} of ${hosts.length} not on the control plane's ${RELEASE_VERSION}: ${outdated
      .map((host) => `${hostName(host)} ${host.agent_version}`)
      .join(', ')}`,
    fix:
      'upgrade them before the next appliance upgrade (one release behind still works): ' +
      `on each host, unpack worker/vp-worker-${RELEASE_VERSION}-linux-x64.tar.gz of the ${RELEASE_VERSION} bundle, run its ` +
      `install-worker.sh --server ${serverUrl} as root (no token: the host stays enrolled), then restart the agent ` +
      '(systemctl restart vp-worker; install-worker.sh does it where systemd runs the agent)',
  };
}

/** The store STORAGE_URL names, never with its credentials. */
function storageName(config: AppConfig): string {
  if (!config.storageUrl) return join(config.dataDir, 'blobs');
  const url = new URL(config.storageUrl);
  return url.protocol === 'file:'
    ? fileURLToPath(url)
    : `bucket ${url.hostname} at ${url.searchParams.get('endpoint')}`;
}

/**
 * Writes, reads back and deletes a probe object, through the same store the control plane uses: `live`, a running
 * control plane's own (left open), else one opened from the configuration for the check.
 */
export async function storageCheck(config: AppConfig, live?: BlobStore): Promise<CheckResult> {
  const check = 'storage';
  const where = storageName(config);
  const fix =
    'check STORAGE_URL, and that the folder exists and the appliance’s user may write there (or the bucket and its credentials)';
  let step = 'open';
  try {
    const store = live ?? (await openBlobStore(config.storageUrl, config.dataDir));
    const key = `doctor/${newId()}`;
    const probe = Buffer.from(`vpctl doctor probe ${key}`);
    try {
      step = 'write';
      await store.put(key, Readable.from([probe]), {
        contentType: 'text/plain',
        expectedBytes: probe.length,
        createOnly: true,
      });
      step = 'read';
      const read = await store.get(key);
      const chunks: Buffer[] = [];
      for await (const chunk of read?.stream ?? []) chunks.push(chunk as Buffer);
      if (!Buffer.concat(chunks).equals(probe))
        return {
          status: 'FAIL',
          check,
          message: `${where}: a probe object read back differs from what was written`,
          fix,
        };
      step = 'delete';
      await store.delete(key);
      if (await store.head(key))
        return { status: 'FAIL', check, message: `${where}: a deleted probe object is still there`, fix };
    } finally {
      await store.delete(key).catch(() => undefined);
      if (!live) await store.close();
    }
    return { status: 'OK', check, message: `${where}: a probe object was written, read back and deleted` };
  } catch (error) {
    return {
      status: 'FAIL',
      check,
      message: `${where}: cannot ${step} (${error instanceof Error ? error.message : String(error)})`,
      fix,
    };
  }
}

export async function diskCheck(dataDir: string): Promise<CheckResult> {
  const check = 'disk';
  let stats;
  try {
    stats = await statfs(dataDir);
  } catch (error) {
    return {
      status: 'FAIL',
      check,
      message: `DATA_DIR ${dataDir}: ${(error as Error).message}`,
      fix: 'create it (the installer does) or set DATA_DIR to the appliance’s data folder',
    };
  }
  const free = stats.bavail * stats.bsize;
  const fraction = free / (stats.blocks * stats.bsize);
  const message = `${gib(free)} free (${Math.round(fraction * 100)} %) on the filesystem of DATA_DIR ${dataDir}`;
  if (fraction < DISK_WARN_FRACTION || free < DISK_WARN_BYTES) {
    return {
      status: 'WARN',
      check,
      message,
      fix: 'free space or grow the disk: uploads, training outputs and the embedded database live there',
    };
  }
  return { status: 'OK', check, message };
}
