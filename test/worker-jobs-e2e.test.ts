// Real vp-worker agents (process runtime) running jobs for a real control plane: assignment, streamed logs,
// completion, cancel, disconnect, the agent killed mid-job, and the control plane killed mid-job.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { enrollAgent, freePort, runAgent, runControlPlane } from './helpers/agent.ts';
import { runNode } from './helpers/run-node.ts';
import { createTestDatabase } from './helpers/db.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

const env = { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000', WORKER_HEARTBEAT_SECONDS: '1', HOST_LOST_GRACE_SECONDS: '30' };
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
  return { handle, key, name: `host-${hosts}`, workRoot, start: () => runAgent(t, config, agentEnv) };
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
  (await call<{ lines: Array<{ stream: string; line: string }> }>(server, 'GET', `/api/jobs/${jobId}/logs`, { key })).body.lines.map((line) => `${line.stream}: ${line.line}`);

t.test('connect, assigned, logs streamed, completed', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(server, host.handle, script('jobs/hello', `console.log('hello from the job'); console.error('a warning'); console.log(process.cwd())`));
  await eventually(async () => (await readJob(server, jobId)).status === 'completed', `the job to complete; agent log:\n${agent.output()}`);
  const job = await readJob(server, jobId);
  t.match(job, { error: null, attempts: 1, host: { name: host.name }, progress: { stage: 'done', percent: 100 } });
  t.same(await logLines(jobId, host.key), ['stdout: hello from the job', `stdout: ${join(host.workRoot, 'jobs/hello')}`, 'stderr: a warning']);

  const failing = await queueCommand(server, host.handle, script('jobs/fail', `console.error('bad input'); process.exit(3)`));
  await eventually(async () => (await readJob(server, failing)).status === 'failed', 'the failing job to fail');
  t.match(await readJob(server, failing), { error: 'exited with status 3', result: { exitCode: 3 } });
});

t.test('cancel mid-run stops the process', async (t) => {
  const host = await enrolledHost();
  host.start();
  const jobId = await queueCommand(server, host.handle, script('jobs/ticker', `setInterval(() => console.log('tick'), 100)`));
  await eventually(async () => (await readJob(server, jobId)).logLines > 2, 'output');
  const pid = pidOf(host.workRoot, 'jobs/ticker');
  t.ok(alive(pid));
  const listed = await runNode(['installer/src/vpctl.ts', 'hosts', 'list', '--workspace', host.handle], { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir });
  t.match(listed.stdout, new RegExp(`${host.name}\\s+${host.handle}\\s+connected\\s+\\S+\\s+.*CPU cores.*\\s+${jobId}\\n`), 'vpctl hosts list shows the running job');
  t.equal((await call(server, 'DELETE', `/api/jobs/${jobId}`, { key: host.key })).status, 200);
  await eventually(async () => (await readJob(server, jobId)).status === 'cancelled', 'cancelled');
  t.notOk(alive(pid), 'the process is gone');
});

t.test('disconnecting the host cancels its job, stops the process and the agent (exit 3)', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(server, host.handle, script('jobs/long', `setInterval(() => console.log('tick'), 100)`));
  await eventually(async () => (await readJob(server, jobId)).acceptedAt, 'acceptance');
  await eventually(async () => existsSync(join(host.workRoot, 'jobs/long/pid')), 'the pid file');
  const pid = pidOf(host.workRoot, 'jobs/long');
  await server.services().hosts.disconnect(host.name, host.handle);
  t.equal(await agent.exited, 3);
  t.notOk(alive(pid), 'nothing left running');
  await eventually(async () => (await readJob(server, jobId)).status === 'cancelled', 'the job to be cancelled');
  t.match(await readJob(server, jobId), { error: 'Cancelled' });
});

t.test('the agent killed mid-job: after its restart the job is cleanly failed, never run twice', async (t) => {
  const host = await enrolledHost();
  const agent = host.start();
  const jobId = await queueCommand(server, host.handle, script('jobs/orphan', `console.log('started'); setInterval(() => {}, 1000)`));
  await eventually(async () => (await readJob(server, jobId)).logLines >= 1, 'the job to start');
  const pid = pidOf(host.workRoot, 'jobs/orphan');
  agent.child.kill('SIGKILL');
  await agent.exited;
  t.ok(alive(pid), 'the job outlives its agent');
  const again = host.start();
  await eventually(async () => (await readJob(server, jobId)).status === 'failed', `the job to fail; agent log:\n${again.output()}`);
  t.notOk(alive(pid), 'the restarted agent stopped the orphan');
  t.match((await readJob(server, jobId)).error, /agent restarted/);
  t.same(await logLines(jobId, host.key), ['stdout: started'], 'it ran once');
});

t.test('the control plane killed mid-job: the agent reconnects and the job finishes and is recorded', async (t) => {
  const db = await createTestDatabase();
  t.teardown(db.drop);
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-cp-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const cpEnv = { ...env, DATABASE_URL: db.url, DATA_DIR: dataDir, PORT: String(await freePort()), SIGNING_SECRET: 'x'.repeat(32) };
  let controlPlane = await runControlPlane(t, cpEnv);
  // Arranged through an in-process instance on the same database (it serves no agent).
  const arranger = await startTestServer(t, { env, databaseUrl: db.url });
  await arranger.services().account.createUser('petra');
  const host = await enrolledHost({ url: controlPlane.url, services: arranger.services });
  const agent = host.start();
  const jobId = await queueCommand(arranger, host.handle, script('jobs/survivor', `console.log('start'); setTimeout(() => console.log('done'), 4000)`));
  await eventually(async () => (await readJob(arranger, jobId)).acceptedAt, 'acceptance');

  controlPlane.child.kill('SIGKILL');
  await controlPlane.exited;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  controlPlane = await runControlPlane(t, cpEnv);
  await eventually(async () => (await readJob(arranger, jobId)).status !== 'running' && readJob(arranger, jobId), `the job to end; agent log:\n${agent.output()}`, 30_000);
  const job = await readJob(arranger, jobId);
  t.match(job, { status: 'completed', attempts: 1 });
  const lines = await call<{ lines: Array<{ line: string }> }>(controlPlane, 'GET', `/api/jobs/${jobId}/logs`, { key: host.key });
  t.same(lines.body.lines.map((line) => line.line), ['start', 'done'], 'output from before and after the restart');
});
