// The real agent against the real control plane: `vp-worker enroll`, then `vp-worker run` as a process
// connects over the worker socket, the host shows as connected with its hardware and its agent's version (another
// release than the control plane's: to upgrade, in the API and `vpctl hosts list`), and disconnecting the host stops
// the agent (its key is refused; exit status 3).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { RELEASE_VERSION } from '../control-plane/src/release-version.ts';
import { runNode } from './helpers/run-node.ts';
import { call, startTestServer } from './helpers/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Hosts {
  hosts: Array<{
    name: string;
    state: string;
    lastHeartbeatAt: string | null;
    agentVersion: string | null;
    agentOutdated: boolean;
  }>;
}

t.test('enroll, run, connected with a heartbeat and its version; disconnect stops the agent', async (t) => {
  const server = await startTestServer(t, {
    env: { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000', WORKER_HEARTBEAT_SECONDS: '1' },
  });
  const account = server.services().account;
  await account.createUser('alice');
  const { key } = await server.services().apiKeys.create('alice', 'ops');
  const dir = mkdtempSync(join(tmpdir(), 'vp-agent-e2e-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'config.json');

  const created = await call<{ enrollmentToken: string }>(server, 'POST', '/api/hosts', {
    key,
    body: { name: 'gpu-01' },
  });
  t.equal(created.status, 201);
  const enroll = spawn(
    process.execPath,
    [
      'worker-agent/bin/vp-worker.js',
      'enroll',
      '--server',
      server.url,
      '--token',
      created.body.enrollmentToken,
      '--config',
      config,
    ],
    { cwd: ROOT, stdio: 'ignore' },
  );
  t.equal(await new Promise((resolve) => enroll.on('close', resolve)), 0, 'enrolled');

  const agent = spawn(process.execPath, ['worker-agent/bin/vp-worker.js', 'run', '--config', config], {
    cwd: ROOT,
    // As the launcher of an older release's distribution sets it.
    env: { ...process.env, VP_WORKER_WORK_DIR: join(dir, 'work'), VP_AGENT_VERSION: '0.0.1-older' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  agent.stderr.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise<number | null>((resolve) => agent.on('close', resolve));
  t.teardown(() => agent.kill('SIGKILL'));

  const hosts = async () => (await call<Hosts>(server, 'GET', '/api/hosts', { key })).body.hosts;
  const until = async (what: string, test: (list: Hosts['hosts']) => boolean) => {
    for (let tries = 0; tries < 100; tries += 1) {
      if (test(await hosts())) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.fail(`${what}; agent log:\n${log}`);
  };
  await until('the host never showed as connected', (list) => list[0]?.state === 'connected');
  const first = (await hosts())[0].lastHeartbeatAt!;
  t.match((await hosts())[0], { agentVersion: '0.0.1-older', agentOutdated: true });
  const listed = await runNode(['installer/src/vpctl.ts', 'hosts', 'list'], {
    DATABASE_URL: server.databaseUrl,
    DATA_DIR: server.dataDir,
  });
  t.match(listed.stdout, `0.0.1-older (control plane ${RELEASE_VERSION}: upgrade)`, listed.stderr);
  await until('no heartbeat moved lastHeartbeatAt', (list) => (list[0]?.lastHeartbeatAt ?? '') > first);

  t.equal((await call(server, 'DELETE', '/api/hosts/gpu-01', { key })).status, 200);
  t.equal(await exited, 3, 'the agent stops with "key refused" once its host is disconnected');
});
