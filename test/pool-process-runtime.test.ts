// A host of the appliance-wide pool runs every workspace's jobs; the process runtime cannot keep them apart (one OS
// user, no filesystem or network isolation). The real agent on the process runtime refuses such a host at its welcome
// (exit status 6, saying why and what to do) before it takes any job, unless its operator allowed it
// (VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME); a workspace's own host needs no such choice.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { startTestServer } from './helpers/server.ts';

const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000', WORKER_HEARTBEAT_SECONDS: '1' } });
await server.services().account.createUser('polly');
const dir = mkdtempSync(join(tmpdir(), 'vp-pool-process-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

async function enrolled(name: string, workspace?: string): Promise<string> {
  const { enrollmentToken } = await server.services().hosts.connect(name, workspace);
  const config = join(dir, `${name}.json`);
  await enrollAgent(t, server.url, enrollmentToken, config);
  return config;
}

t.test('on a pool host the process runtime stops at the welcome, before any job, unless allowed', async (t) => {
  const config = await enrolled('pool-host');
  const work = join(dir, 'pool-work');
  // Queued first: the control plane assigns it right after the welcome.
  const jobId = await queueCommand(server, 'polly', {
    command: [process.execPath, '-e', 'console.log("ran")'],
    workDir: 'jobs/first',
  });
  const refused = runAgent(t, config, {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: work,
    VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '0',
  });
  t.equal(await refused.exited, 6, 'a permanent refusal: a service manager does not restart it');
  t.match(refused.output(), /appliance-wide pool.*process runtime cannot keep them apart.*allowSharedProcessRuntime/);
  t.notOk(existsSync(join(work, 'jobs', 'first')), 'the job was never started here');

  const allowed = runAgent(t, config, {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: work,
    VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '1',
  });
  await eventually(
    async () => (await readJob(server, jobId)).status === 'completed',
    `the job to run once allowed; agent log:\n${allowed.output()}`,
    60_000,
  );
  t.ok(existsSync(join(work, 'jobs', 'first')), 'it ran here');
  allowed.child.kill('SIGTERM');
  t.equal(await allowed.exited, 0);
});

t.test("a workspace's own host runs the process runtime without that choice", async (t) => {
  const config = await enrolled('own-host', 'polly');
  const jobId = await queueCommand(server, 'polly', {
    command: [process.execPath, '-e', 'console.log("ran")'],
    workDir: 'jobs/own',
  });
  const agent = runAgent(t, config, {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(dir, 'own-work'),
    VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '0',
  });
  await eventually(
    async () => (await readJob(server, jobId)).status === 'completed',
    `the job to run; agent log:\n${agent.output()}`,
    60_000,
  );
  t.ok(existsSync(join(dir, 'own-work', 'jobs', 'own')), 'it ran here');
});
