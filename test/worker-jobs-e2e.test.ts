// Real vp-worker agents (process runtime) running jobs for a real control plane: assignment, streamed logs,
// completion, failure causes, cancel, disconnect, the agent stopped or killed mid-job (the job runs on and is
// adopted), the control plane killed mid-job, and finished jobs' work dirs removed after their keep time.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { enrollAgent, freePort, runAgent, runControlPlane } from './helpers/agent.ts';
import { runNode } from './helpers/run-node.ts';
import { createTestDatabase } from './helpers/db.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

const env = {
  RATE_LIMIT_DEFAULT: '100000',
  RATE_LIMIT_MUTATION: '100000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '30',
};
const server = await startTestServer(t, { env });
await server.services().account.createUser('petra');

let hosts = 0;
/** A team with one enrolled host (not yet running); its agent's config and work dir live in a temp dir. */
async function enrolledHost(target: { url: string; services: TestServer['services'] } = server) {
  const handle = `agents-${++hosts}`;
  await target.services().account.createTeam(handle, 'petra');
  const key = (await target.services().apiKeys.create(handle, 'ci')).key;
  const dir = mkdtempSync(join(tmpdir(), 'vp-agent-jobs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { enrollmentToken } = await target.services().hosts.connect(`host-${hosts}`, handle);
  const config = join(dir, 'config.json');
  await enrollAgent(t, target.url, enrollmentToken, config);
  const workRoot = join(dir, 'work');
  const agentEnv = { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: workRoot };
  return {
    handle,
    key,
    name: `host-${hosts}`,
    workRoot,
    start: (extra: Record<string, string> = {}) => runAgent(t, config, { ...agentEnv, ...extra }),
  };
}

/** A node script as a job; it writes its pid to `pid` in its work dir, so the test can see whether it still runs. */
const script = (workDir: string, code: string) => ({
  command: [process.execPath, '-e', `require('fs').writeFileSync('pid', String(process.pid)); ${code}`],
  workDir,
});
const pidOf = (workRoot: string, workDir: string) => Number(readFileSync(join(workRoot, workDir, 'pid'), 'utf8'));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const logLines = async (jobId: string, key: string) =>
  (
    await call<{ lines: Array<{ stream: string; line: string }> }>(server, 'GET', `/api/jobs/${jobId}/logs`, { key })
  ).body.lines.map((line) => `${line.stream}: ${line.line}`);

t.test('connect, assigned, logs streamed, completed', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(
    server,
    host.handle,
    script('jobs/hello', `console.log('hello from the job'); console.error('a warning'); console.log(process.cwd())`),
  );
  await eventually(
    async () => (await readJob(server, jobId)).status === 'completed',
    `the job to complete; agent log:\n${agent.output()}`,
  );
  const job = await readJob(server, jobId);
  t.match(job, { error: null, attempts: 1, host: { name: host.name }, progress: { stage: 'done', percent: 100 } });
  t.same(await logLines(jobId, host.key), [
    'stdout: hello from the job',
    `stdout: ${join(host.workRoot, 'jobs/hello')}`,
    'stderr: a warning',
  ]);

  const failing = await queueCommand(
    server,
    host.handle,
    script(
      'jobs/fail',
      `console.error('ValueError: bad input in ' + process.cwd() + '/data.yaml'); console.log('cleaning up'); process.exit(3)`,
    ),
  );
  await eventually(async () => (await readJob(server, failing)).status === 'failed', 'the failing job to fail');
  t.match(
    await readJob(server, failing),
    { error: 'exited with status 3: ValueError: bad input in data.yaml', result: { exitCode: 3 } },
    'the cause, without the host path',
  );
});

t.test('cancel mid-run stops the process', async (t) => {
  const host = await enrolledHost();
  host.start();
  const jobId = await queueCommand(
    server,
    host.handle,
    script('jobs/ticker', `setInterval(() => console.log('tick'), 100)`),
  );
  await eventually(async () => (await readJob(server, jobId)).logLines > 2, 'output');
  const pid = pidOf(host.workRoot, 'jobs/ticker');
  t.ok(alive(pid));
  const listed = await runNode(['installer/src/vpctl.ts', 'hosts', 'list', '--workspace', host.handle], {
    DATABASE_URL: server.databaseUrl,
    DATA_DIR: server.dataDir,
  });
  t.match(
    listed.stdout,
    new RegExp(`${host.name}\\s+${host.handle}\\s+connected\\s+\\S+\\s+.*CPU cores.*\\s+${jobId}\\n`),
    'vpctl hosts list shows the running job',
  );
  t.equal((await call(server, 'DELETE', `/api/jobs/${jobId}`, { key: host.key })).status, 200);
  await eventually(async () => (await readJob(server, jobId)).status === 'cancelled', 'cancelled');
  t.notOk(alive(pid), 'the process is gone');
});

t.test('disconnecting the host cancels its job, stops the process and the agent (exit 3)', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(
    server,
    host.handle,
    script('jobs/long', `setInterval(() => console.log('tick'), 100)`),
  );
  await eventually(async () => (await readJob(server, jobId)).acceptedAt, 'acceptance');
  await eventually(async () => existsSync(join(host.workRoot, 'jobs/long/pid')), 'the pid file');
  const pid = pidOf(host.workRoot, 'jobs/long');
  await server.services().hosts.disconnect(host.name, host.handle);
  t.equal(await agent.exited, 3);
  t.notOk(alive(pid), 'nothing left running');
  await eventually(async () => (await readJob(server, jobId)).status === 'cancelled', 'the job to be cancelled');
  t.match(await readJob(server, jobId), { error: 'Cancelled' });
});

/** A job that prints `before`, waits for a file `go` in its work dir, then prints `after` and exits 0. */
const gated = (workDir: string) =>
  script(
    workDir,
    `console.log('before'); const wait = setInterval(() => { if (!require('fs').existsSync('go')) return; clearInterval(wait); console.log('after'); }, 50)`,
  );

t.test(
  'the agent stopped (SIGTERM) mid-job: the job runs on and ends meanwhile; the restarted agent reports it completed, once',
  async (t) => {
    const host = await enrolledHost();
    const agent = host.start();
    const jobId = await queueCommand(server, host.handle, gated('jobs/outlives'));
    await eventually(
      async () => (await logLines(jobId, host.key)).includes('stdout: before'),
      `the job to start; agent log:\n${agent.output()}`,
    );
    const pid = pidOf(host.workRoot, 'jobs/outlives');
    agent.child.kill('SIGTERM');
    t.equal(await agent.exited, 0, 'the agent stops cleanly');
    t.ok(alive(pid), 'the job outlives its agent');

    writeFileSync(join(host.workRoot, 'jobs/outlives/go'), '');
    await eventually(async () => !alive(pid), 'the job to end while no agent runs');
    t.match(await readJob(server, jobId), { status: 'running', attempts: 1 }, 'the control plane still waits for it');

    const again = host.start();
    await eventually(
      async () => (await readJob(server, jobId)).status === 'completed',
      `the job to be reported; agent log:\n${again.output()}`,
    );
    t.match(await readJob(server, jobId), { status: 'completed', error: null, attempts: 1 });
    t.same(
      await logLines(jobId, host.key),
      ['stdout: before', 'stdout: after'],
      'it ran once; its output from both sides of the restart, each line once',
    );
    t.equal(again.output().match(/"job ended"/g)?.length, 1, 'reported once');
  },
);

t.test('the agent killed mid-job: the restarted agent adopts the running job and follows it to its end', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(server, host.handle, gated('jobs/orphan'));
  await eventually(async () => (await logLines(jobId, host.key)).includes('stdout: before'), 'the job to start');
  const pid = pidOf(host.workRoot, 'jobs/orphan');
  agent.child.kill('SIGKILL');
  await agent.exited;
  const again = host.start();
  await eventually(
    async () => again.output().includes('recovered a job'),
    `the restarted agent to adopt the job; agent log:\n${again.output()}`,
  );
  t.ok(alive(pid), 'the job still runs');
  writeFileSync(join(host.workRoot, 'jobs/orphan/go'), '');
  await eventually(
    async () => (await readJob(server, jobId)).status === 'completed',
    `the job to complete; agent log:\n${again.output()}`,
  );
  t.match(await readJob(server, jobId), { attempts: 1 });
  t.same(await logLines(jobId, host.key), ['stdout: before', 'stdout: after'], 'it ran once');
});

t.test(
  'a job that ended while no agent ran: counted for what it ran and ended when it exited, not when the agent came back',
  async (t) => {
    const host = await enrolledHost();
    const agent = host.start();
    const jobId = await queueCommand(server, host.handle, gated('jobs/timed'));
    await eventually(async () => (await logLines(jobId, host.key)).includes('stdout: before'), 'the job to start');
    const pid = pidOf(host.workRoot, 'jobs/timed');
    agent.child.kill('SIGKILL');
    await agent.exited;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    writeFileSync(join(host.workRoot, 'jobs/timed/go'), '');
    await eventually(async () => !alive(pid), 'the job to end while no agent runs');
    const exited = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const again = host.start();
    await eventually(
      async () => (await readJob(server, jobId)).status === 'completed',
      `the job to be reported; agent log:\n${again.output()}`,
    );
    const job = await readJob(server, jobId);
    const ran = (exited - job.startedAt!.getTime()) / 1000;
    t.ok(
      Math.abs(Number(job.runSeconds) - ran) < 1,
      `ran ${job.runSeconds} s, about its ${ran} s from assignment to exit, not until the agent came back`,
    );
    t.ok(Math.abs(job.finishedAt!.getTime() - exited) < 1000, 'ended when its process exited');
  },
);

t.test(
  "finished jobs' work dirs: kept for VP_WORKER_KEEP_WORK_DIRS_HOURS, removed once that is over (0: at once)",
  async (t) => {
    const host = await enrolledHost();
    let agent = host.start();
    const kept = await queueCommand(server, host.handle, script('training/kept/1', `console.log('done')`));
    await eventually(
      async () => (await readJob(server, kept)).status === 'completed',
      `the job to complete; agent log:\n${agent.output()}`,
    );
    t.ok(existsSync(join(host.workRoot, 'training/kept/1/pid')), 'kept by default (24 hours)');

    // A restart with a keep time that is already over sweeps it at start.
    agent.child.kill('SIGTERM');
    await agent.exited;
    // 36 ms: over before this agent is even up.
    agent = host.start({ VP_WORKER_KEEP_WORK_DIRS_HOURS: '0.00001' });
    await eventually(
      async () => !existsSync(join(host.workRoot, 'training/kept')),
      `the old work dir to be swept; agent log:\n${agent.output()}`,
    );
    t.ok(existsSync(host.workRoot), 'the work root stays');

    agent.child.kill('SIGTERM');
    await agent.exited;
    agent = host.start({ VP_WORKER_KEEP_WORK_DIRS_HOURS: '0' });
    const removed = await queueCommand(server, host.handle, gated('jobs/removed'));
    await eventually(async () => (await logLines(removed, host.key)).includes('stdout: before'), 'the job to start');
    t.ok(existsSync(join(host.workRoot, 'jobs/removed/pid')), 'a running job keeps its work dir');
    writeFileSync(join(host.workRoot, 'jobs/removed/go'), '');
    await eventually(async () => (await readJob(server, removed)).status === 'completed', 'the job to complete');
    await eventually(
      async () => !existsSync(join(host.workRoot, 'jobs/removed')),
      'its work dir to be removed at once',
    );
  },
);

t.test('the control plane killed mid-job: the agent reconnects and the job finishes and is recorded', async (t) => {
  const db = await createTestDatabase();
  t.teardown(db.drop);
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-cp-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const cpEnv = {
    ...env,
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    SIGNING_SECRET: 'x'.repeat(32),
  };
  let controlPlane = await runControlPlane(t, cpEnv);
  // Arranged through an in-process instance on the same database (it serves no agent).
  const arranger = await startTestServer(t, { env, databaseUrl: db.url });
  await arranger.services().account.createUser('petra');
  const host = await enrolledHost({ url: controlPlane.url, services: () => arranger.services() });
  const agent = host.start();
  const jobId = await queueCommand(
    arranger,
    host.handle,
    script('jobs/survivor', `console.log('start'); setTimeout(() => console.log('done'), 4000)`),
  );
  await eventually(async () => (await readJob(arranger, jobId)).acceptedAt, 'acceptance');

  controlPlane.child.kill('SIGKILL');
  await controlPlane.exited;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  controlPlane = await runControlPlane(t, cpEnv);
  await eventually(
    async () => (await readJob(arranger, jobId)).status !== 'running' && readJob(arranger, jobId),
    `the job to end; agent log:\n${agent.output()}`,
    30_000,
  );
  const job = await readJob(arranger, jobId);
  t.match(job, { status: 'completed', attempts: 1 });
  const lines = await call<{ lines: Array<{ line: string }> }>(controlPlane, 'GET', `/api/jobs/${jobId}/logs`, {
    key: host.key,
  });
  t.same(
    lines.body.lines.map((line) => line.line),
    ['start', 'done'],
    'output from before and after the restart',
  );
});
