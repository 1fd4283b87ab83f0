// Two agents on one worker key, connected to two control-plane processes on one database. The rule: the newest
// hello is the host, and its list of running jobs is the truth about the host's jobs. The older socket is closed
// with CLOSE.replaced at once, on whichever replica holds it, and nothing it sends after the takeover changes
// anything (reports, heartbeats, its disconnect), nor does its replica assign it more work.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLOSE } from '../protocol/src/close-codes.ts';
import { enrollAgent, freePort, runAgent, runControlPlane } from './helpers/agent.ts';
import { adminQuery, createTestDatabase } from './helpers/db.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { startTestServer } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';

const env = {
  RATE_LIMIT_DEFAULT: '100000',
  RATE_LIMIT_MUTATION: '100000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '30',
};
const db = await createTestDatabase();
t.teardown(db.drop);

async function replica() {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-replica-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return runControlPlane(t, {
    ...env,
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    PORT: String(await freePort()),
    SIGNING_SECRET: 'x'.repeat(32),
  });
}
const one = await replica();
const two = await replica();
// Data is arranged through an in-process instance on the same database; no agent connects to it.
const arranger = await startTestServer(t, { env, databaseUrl: db.url });
await arranger.services().account.createUser('petra');

let teams = 0;
async function team(): Promise<string> {
  const handle = `sessions-${++teams}`;
  await arranger.services().account.createTeam(handle, 'petra');
  return handle;
}

const hostRow = async (hostId: string) =>
  (await adminQuery('select state, session_id, session_replica from hosts where id = $1', [hostId], db.url))
    .rows[0] as { state: string; session_id: string | null };

/** The close, or a failure naming `what` when the socket is still open after `ms`. */
function closedWithin(client: WorkerClient, ms: number, what: string): Promise<{ code: number; reason: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms)),
  );
  return Promise.race([client.closed, timeout]).finally(() => clearTimeout(timer));
}

/** A scripted agent on `target` that has accepted the one job queued for its team. */
async function runningOneJob(target: { url: string }, handle: string, workerKey: string) {
  const { client } = await WorkerClient.welcomed(target, workerKey);
  t.teardown(() => client.ws.terminate());
  const jobId = await queueCommand(arranger, handle, { command: ['train'] });
  const assigned = await client.nextOf('job.assign');
  t.equal(assigned.jobId, jobId);
  client.send({ type: 'job.accepted', jobId });
  await eventually(async () => (await readJob(arranger, jobId)).acceptedAt, 'acceptance');
  return { client, jobId };
}

t.test(
  'an agent on another replica takes the host over: the real agent it replaced is closed with 4003 and stops; the job both know stays running',
  async (t) => {
    const handle = await team();
    const dir = mkdtempSync(join(tmpdir(), 'vp-sessions-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'config.json');
    const { enrollmentToken } = await arranger.services().hosts.connect('twin', handle);
    await enrollAgent(t, one.url, enrollmentToken, config);
    const { hostId, workerKey } = JSON.parse(readFileSync(config, 'utf8')) as { hostId: string; workerKey: string };
    const older = runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, 'work') });
    const jobId = await queueCommand(arranger, handle, {
      command: [process.execPath, '-e', 'setInterval(() => {}, 1000)'],
      workDir: 'jobs/long',
    });
    await eventually(
      async () => (await readJob(arranger, jobId)).acceptedAt,
      `acceptance; agent log:\n${older.output()}`,
    );

    const { client: newer, welcome } = await WorkerClient.welcomed(two, workerKey, {
      runningJobs: [{ jobId, attempt: 1 }],
    });
    t.teardown(() => newer.ws.terminate());
    newer.beat();
    t.match(welcome, { type: 'welcome', hostId });
    const exited = await Promise.race([
      older.exited,
      new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000)),
    ]);
    t.equal(
      exited,
      5,
      `the older agent stops (exit 5: replaced) instead of fighting back; its log:\n${older.output()}`,
    );
    t.match(older.output(), /another agent connected with this host's key and took over/);
    t.match(older.output(), /"code":4003/);

    t.match(
      await readJob(arranger, jobId),
      { status: 'running', host: { id: hostId }, error: null },
      'the job the newest hello reported is still the host’s',
    );
    t.match(await hostRow(hostId), { state: 'connected' }, 'the older socket’s disconnect did not disconnect the host');
    newer.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    await eventually(
      async () => (await readJob(arranger, jobId)).status === 'completed',
      'the newer agent’s report to complete the job',
    );
    const next = await queueCommand(arranger, handle, { command: ['next'] });
    t.equal((await newer.nextOf('job.assign')).jobId, next, 'new work goes to the newer agent, through replica two');
  },
);

t.test('the newest hello decides: a job it does not report is released, although the older agent ran it', async (t) => {
  const handle = await team();
  const { hostId, workerKey } = await enrollHost(arranger, 'forgetful', handle);
  const { client: older, jobId } = await runningOneJob(one, handle, workerKey);
  const { client: newer } = await WorkerClient.welcomed(two, workerKey, { runningJobs: [] });
  t.teardown(() => newer.ws.terminate());
  t.match(await closedWithin(older, 5000, 'the older socket'), {
    code: CLOSE.replaced,
    reason: 'replaced by a newer connection',
  });
  t.match(await readJob(arranger, jobId), { status: 'failed', error: 'The host restarted without the job' });
  t.match(await hostRow(hostId), { state: 'connected' });
});

t.test(
  'a socket whose host was taken over changes nothing, even before its replica hears of the takeover',
  async (t) => {
    const handle = await team();
    const { hostId, workerKey } = await enrollHost(arranger, 'stale', handle);
    const { client: older, jobId } = await runningOneJob(one, handle, workerKey);
    // Another replica's takeover whose announcement has not reached replica one (its LISTEN connection was down, say).
    const elsewhere = '0'.repeat(24);
    await adminQuery(
      'update hosts set session_id = $1, session_replica = $1 where id = $2',
      [elsewhere, hostId],
      db.url,
    );

    const queued = await queueCommand(arranger, handle, { command: ['more'] });
    t.ok(await older.quiet(1500), 'replica one assigns its socket nothing more');
    t.equal((await readJob(arranger, queued)).status, 'queued');

    older.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    t.match(await closedWithin(older, 5000, 'the stale socket'), { code: CLOSE.replaced }, 'its next report closes it');
    t.match(await readJob(arranger, jobId), { status: 'running', finishedAt: null }, 'the report changed nothing');
    t.match(await hostRow(hostId), { state: 'connected', session_id: elsewhere }, 'nor did its disconnect');
  },
);
