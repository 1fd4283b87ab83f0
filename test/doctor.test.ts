// vpctl doctor against a real control plane, database and storage folder: every check OK on a healthy install; WARN
// for a host that was lost and for one whose agent is of another release; FAIL (exit 1) for replicas signing with different secrets, a storage folder that cannot be
// written, a short signing secret, a database that does not answer; a short SIGNING_SECRET is an invalid configuration.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import { RELEASE_VERSION } from '../control-plane/src/release-version.ts';
import { freePort } from './helpers/agent.ts';
import { runNode } from './helpers/run-node.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { enrollHost, WorkerClient } from './helpers/worker-client.ts';

const SECRET = randomBytes(32).toString('hex');
const CHECKS = [
  'database',
  'migrations',
  'clock',
  'signing secret',
  'replicas',
  'storage',
  'hosts',
  'agent versions',
  'disk',
];

interface Checked {
  code: number | null;
  stdout: string;
  /** Each line's status and text, by check. */
  checks: Map<string, { status: string; text: string }>;
}

async function doctor(env: Record<string, string>): Promise<Checked> {
  const run = await runNode(['installer/src/vpctl.ts', 'doctor'], env);
  const checks = new Map<string, { status: string; text: string }>();
  for (const line of run.stdout.trimEnd().split('\n')) {
    const match = /^(OK|WARN|FAIL) +(\S+(?: \S+)?) {2,}(.*)$/.exec(line);
    if (!match) throw new Error(`not a check line: ${JSON.stringify(line)} (stderr: ${run.stderr})`);
    checks.set(match[2], { status: match[1], text: match[3] });
  }
  return { code: run.code, stdout: run.stdout, checks };
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'vp-doctor-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const environment = (server: TestServer) => ({
  DATABASE_URL: server.databaseUrl,
  DATA_DIR: server.dataDir,
  SIGNING_SECRET: SECRET,
  PUBLIC_BASE_URL: server.url,
});

async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

t.test('a healthy install, then a lost host and an outdated agent, then a replica with another secret', async (t) => {
  const server = await startTestServer(t, { env: { SIGNING_SECRET: SECRET } });
  const { workerKey } = await enrollHost(server, 'gpu-a');
  const { client } = await WorkerClient.welcomed(server, workerKey);
  client.beat();

  const healthy = await doctor(environment(server));
  t.comment(healthy.stdout.trimEnd());
  t.equal(healthy.code, 0, healthy.stdout);
  t.same([...healthy.checks.keys()], CHECKS, 'one line per check, in order');
  for (const check of CHECKS.filter((name) => name !== 'disk'))
    t.equal(healthy.checks.get(check)!.status, 'OK', `${check}: ${healthy.checks.get(check)!.text}`);
  t.match(healthy.checks.get('disk')!.status, /^(OK|WARN)$/, 'the disk check depends on this machine');
  t.match(healthy.checks.get('migrations')!.text, /^all \d+ applied$/);
  t.match(healthy.checks.get('signing secret')!.text, 'from SIGNING_SECRET, 64 characters');
  t.match(healthy.checks.get('replicas')!.text, /^1 running \(.+ \d+\.\d+\.\d+\), one signing secret$/);
  t.match(
    healthy.checks.get('storage')!.text,
    `${server.dataDir}/blobs: a probe object was written, read back and deleted`,
  );
  t.equal(healthy.checks.get('hosts')!.text, '1 connected');
  t.equal(healthy.checks.get('agent versions')!.text, `1 on ${RELEASE_VERSION}, the control plane's`);
  t.match(healthy.checks.get('clock')!.text, /^this machine's clock is 0\.\d\d s (ahead of|behind) the database's$/);

  client.ws.close();
  await client.closed;
  const stateOf = async () =>
    (
      await server.orm.em
        .fork()
        .getConnection()
        .execute<[{ state: string }]>("select state from hosts where name = 'gpu-a'")
    )[0].state;
  await until(async () => (await stateOf()) === 'disconnected');
  const older = await enrollHost(server, 'gpu-b');
  await WorkerClient.welcomed(server, older.workerKey, { agentVersion: '0.0.1-older' });
  const lost = await doctor(environment(server));
  t.equal(lost.code, 0, 'a WARN is not a failure');
  t.match(lost.checks.get('hosts'), {
    status: 'WARN',
    text: /^1 of 2 lost: gpu-a \(last heartbeat \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\); 1 connected -> check the agent on each: systemctl status vp-worker/,
  });
  t.same(
    lost.checks.get('agent versions'),
    {
      status: 'WARN',
      text:
        `1 of 2 not on the control plane's ${RELEASE_VERSION}: gpu-b 0.0.1-older -> upgrade them before the next appliance upgrade (one release behind ` +
        `still works): on each host, unpack worker/vp-worker-${RELEASE_VERSION}-linux-x64.tar.gz of the ${RELEASE_VERSION} bundle, run its ` +
        `install-worker.sh --server ${server.url} as root (no token: the host stays enrolled), then restart the agent (systemctl restart vp-worker; ` +
        'install-worker.sh does it where systemd runs the agent)',
    },
    'the lost host of this release is not listed',
  );

  await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { SIGNING_SECRET: randomBytes(32).toString('hex') },
  });
  const split = await doctor(environment(server));
  t.equal(split.code, 1);
  t.match(split.checks.get('replicas'), {
    status: 'FAIL',
    text: /^2 running sign with 2 different secrets: .*-> give every replica the same SIGNING_SECRET and restart them$/,
  });
});

t.test('FAIL for storage that cannot be written, a short secret, a database that does not answer', async (t) => {
  const server = await startTestServer(t, { env: { SIGNING_SECRET: SECRET } });
  const blocker = join(tempDir(t), 'a-file');
  writeFileSync(blocker, 'not a folder');
  const storage = await doctor({ ...environment(server), STORAGE_URL: pathToFileURL(join(blocker, 'blobs')).href });
  t.equal(storage.code, 1);
  t.match(storage.checks.get('storage'), {
    status: 'FAIL',
    text: /^.*a-file\/blobs: cannot write \(ENOTDIR.*\) -> check STORAGE_URL/,
  });
  t.equal(storage.checks.get('database')!.status, 'OK', 'the other checks still run');

  const shortEnv = await runNode(['installer/src/vpctl.ts', 'doctor'], {
    ...environment(server),
    SIGNING_SECRET: 'too-short',
  });
  t.equal(shortEnv.code, 78, 'an invalid configuration, as the server would refuse it');
  t.match(
    shortEnv.stdout,
    /^FAIL {2}configuration {3}.*SIGNING_SECRET.*at least 32 characters.* -> fix the environment/,
  );

  // No SIGNING_SECRET: the secret is the data dir's file, cut short here.
  const dataDir = tempDir(t);
  writeFileSync(join(dataDir, 'signing-secret'), 'short');
  const shortFile = await doctor({ DATABASE_URL: server.databaseUrl, DATA_DIR: dataDir });
  t.equal(shortFile.code, 1);
  t.match(shortFile.checks.get('signing secret'), {
    status: 'FAIL',
    text: /has 5 characters; signed URLs need at least 32 -> set SIGNING_SECRET/,
  });
  t.match(shortFile.checks.get('replicas'), {
    status: 'WARN',
    text: /this environment's signing secret is not theirs/,
  });

  const unreachable = await doctor({
    ...environment(server),
    DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/nothing`,
  });
  t.equal(unreachable.code, 1);
  t.same(
    [...unreachable.checks.keys()],
    ['database', 'signing secret', 'storage', 'disk'],
    'what needs no database is still checked',
  );
  t.match(unreachable.checks.get('database'), {
    status: 'FAIL',
    text: /^cannot reach it \(.*\) -> check DATABASE_URL/,
  });
});
