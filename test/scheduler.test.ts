// The host-job scheduler against scripted worker agents (plain sockets with made-up GPUs): per-GPU slots,
// priority then FIFO, GPU type and workspace matching, logs, cancel, a lost host, reconnect reconciliation
// and two control-plane replicas sharing one database.
import type { Gpu, Hardware } from '@vp/protocol';
import pg from 'pg';
import t, { type Test } from 'tap';
import { CLOSE } from '../protocol/src/close-codes.ts';
import { call, startTestServer } from './helpers/server.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';

const env = {
  RATE_LIMIT_DEFAULT: '100000',
  RATE_LIMIT_MUTATION: '100000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '2',
};
const server = await startTestServer(t, { env });
const account = server.services().account;
await account.createUser('samuel');

const gpu = (index: number, typeId = 'rtx-4090'): Gpu => ({
  index,
  model: typeId,
  typeId,
  memoryMiB: 24_564,
  driverVersion: '550.54',
});
const hardware = (gpus: Gpu[]): Hardware => ({
  cpu: { model: 'Test CPU', cores: 8 },
  memoryBytes: 2 ** 34,
  diskFreeBytes: 2 ** 36,
  gpus,
  cpuOnly: gpus.length === 0,
});

let teams = 0;
/** A fresh team with a key, so each test's jobs meet only its own private hosts. */
async function team(): Promise<{ handle: string; key: string }> {
  const handle = `sched-${++teams}`;
  await account.createTeam(handle, 'samuel');
  return { handle, key: (await server.services().apiKeys.create(handle, 'ci')).key };
}

async function host(
  handle: string,
  name: string,
  gpus: Gpu[],
  target: { url: string; services: typeof server.services } = server,
  hello: Record<string, unknown> = {},
) {
  const { hostId, workerKey } = await enrollHost(target, name, handle);
  const { client } = await WorkerClient.welcomed(target, workerKey, { hardware: hardware(gpus), ...hello });
  t.teardown(() => client.ws.terminate());
  return { hostId, workerKey, client: client.beat() };
}

/** A CPU job queued for `handle`, assigned to a fresh host of its own and accepted there. */
async function acceptedJob(handle: string, hostName: string, command: string) {
  const jobId = await queueCommand(server, handle, { command: [command] });
  const { client } = await host(handle, hostName, []);
  await client.nextOf('job.assign');
  client.send({ type: 'job.accepted', jobId });
  await eventually(async () => (await readJob(server, jobId)).acceptedAt, 'acceptance');
  return { jobId, client };
}

const status = async (jobId: string) => (await readJob(server, jobId)).status;

/** A connection of the test's own to the server's database, as another replica or an operator would hold one. */
async function adminClient(test: Test) {
  const admin = new pg.Client({ connectionString: server.databaseUrl });
  await admin.connect();
  test.teardown(() => admin.end());
  return admin;
}

t.test('one job per free GPU, each with its own GPUs; a freed GPU goes to the next job', async (t) => {
  const { handle } = await team();
  const jobs = [];
  for (let n = 0; n < 3; n++)
    jobs.push(await queueCommand(server, handle, { command: ['train'] }, { gpuType: 'rtx-4090', gpuCount: 1 }));
  const { client } = await host(handle, 'two-gpus', [gpu(0), gpu(1)]);
  const first = await client.nextOf('job.assign');
  const second = await client.nextOf('job.assign');
  t.same([first.jobId, second.jobId], jobs.slice(0, 2), 'oldest first');
  t.same(
    [first.spec.gpus, second.spec.gpus].map((gpus) => gpus.indexes ?? []).sort((a, b) => a[0] - b[0]),
    [[0], [1]],
    'each job sees its own GPU',
  );
  t.equal(first.attempt, 1);
  t.ok(await client.quiet(600), 'the third waits: no GPU is free');
  t.equal(await status(jobs[2]), 'queued');

  client.send({ type: 'job.accepted', jobId: first.jobId });
  await eventually(async () => (await readJob(server, first.jobId)).acceptedAt, 'acceptance');
  await new Promise((resolve) => setTimeout(resolve, 300));
  client.send({ type: 'job.finished', jobId: first.jobId, outcome: 'completed', exitCode: 0 });
  const third = await client.nextOf('job.assign');
  t.equal(third.jobId, jobs[2]);
  t.same(third.spec.gpus, first.spec.gpus, 'it gets the freed GPU');
  const done = await readJob(server, first.jobId);
  t.match(done, { status: 'completed', result: { exitCode: 0 }, error: null });
  t.ok(
    Number(done.runSeconds) >= 0.3 && Number(done.runSeconds) < 5,
    `its run time from acceptance to end is recorded (${done.runSeconds} s)`,
  );
  t.ok(done.finishedAt);
});

t.test('priority first, then the order jobs were queued; a job needing more GPUs is not overtaken', async (t) => {
  const { handle } = await team();
  const low = await queueCommand(server, handle, { command: ['low'] }, { gpuCount: 1, priority: -1 });
  const older = await queueCommand(server, handle, { command: ['older'] }, { gpuCount: 1 });
  const urgent = await queueCommand(server, handle, { command: ['urgent'] }, { gpuCount: 1, priority: 5 });
  const { client } = await host(handle, 'one-gpu', [gpu(0)]);
  const order = [];
  for (let n = 0; n < 3; n++) {
    const assigned = await client.nextOf('job.assign');
    order.push(assigned.jobId);
    client.send({ type: 'job.finished', jobId: assigned.jobId, outcome: 'completed', exitCode: 0 });
  }
  t.same(order, [urgent, older, low]);
  client.ws.close();
  await client.closed;

  const { client: pair } = await host(handle, 'two-gpus', [gpu(0), gpu(1)]);
  const single = await queueCommand(server, handle, { command: ['one'] }, { gpuCount: 1 });
  t.equal((await pair.nextOf('job.assign')).jobId, single);
  const big = await queueCommand(server, handle, { command: ['big'] }, { gpuCount: 2 });
  const small = await queueCommand(server, handle, { command: ['small'] }, { gpuCount: 1 });
  t.ok(await pair.quiet(600), 'the 1-GPU job does not jump the 2-GPU job waiting for both GPUs');
  pair.send({ type: 'job.finished', jobId: single, outcome: 'completed' });
  const both = await pair.nextOf('job.assign');
  t.equal(both.jobId, big);
  t.same(both.spec.gpus, { count: 2, indexes: [0, 1] });
  t.equal(await status(small), 'queued');
});

t.test('GPU type, CPU jobs and workspaces: a host takes only what it can run and is allowed to', async (t) => {
  const { handle } = await team();
  const other = await team();
  const h100 = await queueCommand(server, handle, { command: ['h100'] }, { gpuType: 'h100-sxm', gpuCount: 1 });
  const foreign = await queueCommand(server, other.handle, { command: ['theirs'] }, { gpuCount: 1 });
  const cpu = await queueCommand(server, handle, { command: ['cpu'] }, { gpuType: 'cpu', gpuCount: 0 });
  const cpu2 = await queueCommand(server, handle, { command: ['cpu2'] }, { gpuCount: 0 });
  const { client } = await host(handle, 'rtx', [gpu(0)]);
  const assigned = await client.nextOf('job.assign');
  t.equal(assigned.jobId, cpu, 'the CPU job runs in the host’s CPU slot');
  t.same(assigned.spec.gpus, { count: 0, indexes: [] });
  t.ok(await client.quiet(600), 'no H100 here, no other workspace’s job, one CPU job at a time');
  t.same([await status(h100), await status(foreign), await status(cpu2)], ['queued', 'queued', 'queued']);

  const { client: cpuOnly } = await host(handle, 'cpu-box', []);
  t.equal((await cpuOnly.nextOf('job.assign')).jobId, cpu2, 'a CPU-only host takes CPU jobs');
  const tooBig = await queueCommand(
    server,
    handle,
    { command: ['big-memory'] },
    { gpuType: 'h100-sxm', gpuCount: 1, memoryBytes: 2 ** 40 },
  );
  const { client: h100Host } = await host(handle, 'h100', [gpu(0, 'h100-sxm')]);
  t.equal((await h100Host.nextOf('job.assign')).jobId, h100);
  t.ok(await h100Host.quiet(300), 'the other workspace’s job stays with its own hosts');
  t.equal(await status(tooBig), 'queued', 'a job needing more memory than the host has waits for a bigger host');
  const { client: theirs } = await host(other.handle, 'theirs', [gpu(0)]);
  t.equal((await theirs.nextOf('job.assign')).jobId, foreign);
});

t.test(
  'a job another dispatch held for a moment goes to the host as soon as it is let go, not at the next poll',
  async (t) => {
    const { handle } = await team();
    const { client } = await host(handle, 'patient', [gpu(0)]);
    const first = await queueCommand(server, handle, { command: ['first'] }, { gpuCount: 1 });
    t.equal((await client.nextOf('job.assign')).jobId, first);
    const second = await queueCommand(server, handle, { command: ['second'] }, { gpuCount: 1 });
    // What another host's dispatch does for an instant: hold the queued job's row in its transaction.
    const holder = new pg.Client({ connectionString: server.databaseUrl });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query('begin');
    await holder.query('select id from jobs where id = $1 for update', [second]);
    client.send({ type: 'job.finished', jobId: first, outcome: 'completed', exitCode: 0 });
    t.ok(await client.quiet(700), 'not while it is held');
    await holder.query('commit');
    t.equal(
      (await client.nextOf('job.assign', 800)).jobId,
      second,
      'at once after, without waiting for the scheduler’s 5-second poll',
    );
  },
);

t.test('a spec beyond the protocol’s limits fails its job instead of reaching the agent', async (t) => {
  const { handle } = await team();
  const oversized = await queueCommand(server, handle, { command: ['echo', 'x'.repeat(17 * 1024)] }, { gpuCount: 1 });
  const fine = await queueCommand(server, handle, { command: ['fine'] }, { gpuCount: 1 });
  const { client } = await host(handle, 'limits', [gpu(0)]);
  t.equal((await client.nextOf('job.assign')).jobId, fine, 'the next job gets the GPU');
  const failed = await readJob(server, oversized);
  t.equal(failed.status, 'failed');
  t.match(failed.error, /breaks the worker protocol's limits \(command\.1: /);
});

t.test('logs stream into the job in order and are read page by page by its workspace only', async (t) => {
  const { handle, key } = await team();
  const stranger = await team();
  const jobId = await queueCommand(server, handle, { command: ['echo'] });
  const { client } = await host(handle, 'logger', []);
  await client.nextOf('job.assign');
  client.send({ type: 'job.accepted', jobId });
  client.send({ type: 'job.log', jobId, stream: 'stdout', lines: ['epoch 1', 'epoch 2'] });
  client.send({ type: 'job.log', jobId, stream: 'stderr', lines: ['warning: slow'] });
  client.send({ type: 'job.progress', jobId, progress: 0.5 });
  client.send({ type: 'job.log', jobId, stream: 'stdout', lines: ['epoch 3'] });
  await eventually(async () => (await readJob(server, jobId)).logLines === 4, 'the lines to land');
  t.match((await readJob(server, jobId)).progress, { stage: 'running', percent: 50 });

  const first = await call<{
    lines: Array<{ seq: number; stream: string; line: string }>;
    nextAfter: number;
    status: string;
  }>(server, 'GET', `/api/jobs/${jobId}/logs?limit=3`, { key });
  t.equal(first.status, 200);
  t.same(
    first.body.lines.map((line) => [line.stream, line.line]),
    [
      ['stdout', 'epoch 1'],
      ['stdout', 'epoch 2'],
      ['stderr', 'warning: slow'],
    ],
  );
  t.equal(first.body.status, 'running');
  const rest = await call<{ lines: Array<{ line: string }>; nextAfter: number }>(
    server,
    'GET',
    `/api/jobs/${jobId}/logs?after=${first.body.nextAfter}`,
    { key },
  );
  t.same(
    rest.body.lines.map((line) => line.line),
    ['epoch 3'],
  );
  const none = await call<{ lines: unknown[]; nextAfter: number }>(
    server,
    'GET',
    `/api/jobs/${jobId}/logs?after=${rest.body.nextAfter}`,
    { key },
  );
  t.same(none.body, { lines: [], nextAfter: rest.body.nextAfter, status: 'running' });
  t.equal(
    (await call(server, 'GET', `/api/jobs/${jobId}/logs`, { key: stranger.key })).status,
    404,
    'another workspace: 404',
  );
  t.equal((await call(server, 'GET', `/api/jobs/${jobId}/logs?limit=0`, { key })).status, 400);
});

t.test('cancelling a running job reaches its host; the host’s report ends it as cancelled', async (t) => {
  const { handle, key } = await team();
  const { jobId, client } = await acceptedJob(handle, 'canceller', 'sleep');
  const cancelled = await call(server, 'DELETE', `/api/jobs/${jobId}`, { key });
  t.same(cancelled.body, { success: true, status: 'running' }, 'asked to stop');
  t.match(await client.nextOf('job.cancel'), { jobId, reason: 'cancelled by a user' });
  client.send({ type: 'job.finished', jobId, outcome: 'failed', exitCode: 143, error: 'killed' });
  await eventually(async () => (await status(jobId)) === 'cancelled', 'cancelled');
  t.equal((await readJob(server, jobId)).error, 'Cancelled');
  t.equal((await call(server, 'DELETE', `/api/jobs/${jobId}`, { key })).status, 409, 'ended: 409');
});

t.test('a cancel requested while the LISTEN connection was down reaches the host once it is back', async (t) => {
  const { handle } = await team();
  const { jobId, client } = await acceptedJob(handle, 'missed-cancel', 'serve');
  const admin = await adminClient(t);
  // The cancel as another replica commits it while this one's LISTEN connection is down: its notification is lost.
  await admin.query('update jobs set cancel_requested = true where id = $1', [jobId]);
  t.ok(await client.quiet(1000), 'nothing told the host yet');
  const dropped = await admin.query(
    `select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and pid <> pg_backend_pid() and query ilike 'LISTEN %'`,
  );
  t.ok(dropped.rowCount! > 0, 'the LISTEN connection dropped');
  t.match(await client.nextOf('job.cancel', 15_000), { jobId }, 'the reconnected replica tells the host to stop it');
  client.send({ type: 'job.finished', jobId, outcome: 'cancelled', exitCode: 143 });
  await eventually(async () => (await status(jobId)) === 'cancelled', 'cancelled');
});

t.test(
  "a job's end the database could not take when it came is stored once it can: the agent sends it once",
  async (t) => {
    const { handle } = await team();
    const { jobId, client } = await acceptedJob(handle, 'unstored-end', 'sleep');
    const admin = await adminClient(t);
    await admin.query('begin');
    await admin.query('select id from jobs where id = $1 for update', [jobId]);
    client.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    // The end's transaction waits for the row; then its connection is cut under it, as a database restart cuts it.
    const waiting = await eventually(async () => {
      const { rows } = await admin.query<{ pid: number }>(
        `select pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and wait_event_type = 'Lock'`,
      );
      return rows.length > 0 && rows;
    }, 'the end waiting for the row');
    for (const { pid } of waiting) await admin.query('select pg_terminate_backend($1)', [pid]);
    await admin.query('rollback');
    await eventually(async () => (await status(jobId)) === 'completed', 'the end stored');
    t.match(await readJob(server, jobId), { status: 'completed', result: { exitCode: 0 } });
  },
);

t.test(
  'a host silent past the grace period loses its jobs: restartable ones go to another host, others fail',
  async (t) => {
    const { handle } = await team();
    const plain = await queueCommand(server, handle, { command: ['plain'] });
    const { client } = await host(handle, 'doomed', []);
    t.equal((await client.nextOf('job.assign')).jobId, plain);
    client.send({ type: 'job.accepted', jobId: plain });
    const restartable = await queueCommand(server, handle, { command: ['again'] }, { gpuCount: 1, restartable: true });
    const { client: gpuHost } = await host(handle, 'doomed-gpu', [gpu(0)]);
    t.equal((await gpuHost.nextOf('job.assign')).jobId, restartable);
    gpuHost.send({ type: 'job.accepted', jobId: restartable });
    await eventually(async () => (await readJob(server, restartable)).acceptedAt, 'acceptance');
    client.ws.terminate();
    gpuHost.ws.terminate();

    const silentSince = Date.now();
    await eventually(async () => (await status(plain)) === 'failed', 'the plain job to fail');
    const lostAfter = (Date.now() - silentSince) / 1000;
    const runSeconds = Number((await readJob(server, plain)).runSeconds);
    t.ok(
      runSeconds < lostAfter,
      `a lost host's job is counted until the host was last heard from (${runSeconds} s), not until it was released (${lostAfter} s later)`,
    );
    t.match((await readJob(server, plain)).error, /host running the job was lost \(no heartbeat for 2 s\)/);
    await eventually(async () => (await status(restartable)) === 'queued', 'the restartable job to be requeued');
    const { client: rescue } = await host(handle, 'rescue', [gpu(0)]);
    const again = await rescue.nextOf('job.assign');
    t.equal(again.jobId, restartable);
    t.equal(again.attempt, 2, 'a second attempt');
  },
);

t.test(
  'after a reconnect: jobs the host still runs stay its own, jobs it lost are released, strangers are stopped',
  async (t) => {
    const { handle } = await team();
    const kept = await queueCommand(server, handle, { command: ['kept'] }, { gpuCount: 1 });
    const lost = await queueCommand(server, handle, { command: ['lost'] }, { gpuCount: 1 });
    const { client, workerKey, hostId } = await host(handle, 'flaky', [gpu(0), gpu(1)]);
    const assigned = [await client.nextOf('job.assign'), await client.nextOf('job.assign')];
    for (const message of assigned) client.send({ type: 'job.accepted', jobId: message.jobId });
    await eventually(async () => (await readJob(server, lost)).acceptedAt, 'acceptance');
    client.ws.terminate();
    await client.closed;

    const keptAttempt = assigned.find((message) => message.jobId === kept)!;
    const { client: back } = await WorkerClient.welcomed(server, workerKey, {
      hardware: hardware([gpu(0), gpu(1)]),
      runningJobs: [
        { jobId: kept, attempt: keptAttempt.attempt, gpuIndexes: keptAttempt.spec.gpus.indexes },
        { jobId: 'stray-job', attempt: 1 },
      ],
    });
    t.teardown(() => back.ws.terminate());
    back.beat();
    t.match(await back.nextOf('job.cancel'), { jobId: 'stray-job' }, 'an unknown job is stopped');
    t.match(await readJob(server, kept), { status: 'running', host: { id: hostId } });
    t.match(await readJob(server, lost), { status: 'failed', error: 'The host restarted without the job' });
    back.send({ type: 'job.finished', jobId: kept, outcome: 'completed', exitCode: 0 });
    await eventually(async () => (await status(kept)) === 'completed', 'the kept job to complete');
  },
);

t.test('an assignment the host never confirmed goes back to the queue without using up an attempt', async (t) => {
  const { handle } = await team();
  const jobId = await queueCommand(server, handle, { command: ['x'] });
  const { client, workerKey } = await host(handle, 'deaf', []);
  t.equal((await client.nextOf('job.assign')).attempt, 1);
  client.ws.terminate();
  await client.closed;
  const { client: back } = await WorkerClient.welcomed(server, workerKey, { hardware: hardware([]) });
  t.teardown(() => back.ws.terminate());
  back.beat();
  const again = await back.nextOf('job.assign');
  t.same([again.jobId, again.attempt], [jobId, 1]);
});

t.test(
  'a job a host could not start (its disk full) goes to another host; one that cannot restart fails as reported',
  async (t) => {
    const { handle } = await team();
    const restartable = await queueCommand(server, handle, { command: ['serve'] }, { restartable: true });
    const { client: full } = await host(handle, 'full-disk', []);
    t.equal((await full.nextOf('job.assign')).jobId, restartable);
    const error = 'the job could not start: ENOSPC: no space left on device, write';
    full.send({ type: 'job.finished', jobId: restartable, outcome: 'failed', error, notStarted: true });
    await eventually(async () => (await status(restartable)) === 'queued', 'the job to be queued again');
    t.ok(await full.quiet(1500), 'the host that could not start it is not given it again at once');
    const { client: other, hostId: otherId } = await host(handle, 'roomy', []);
    const again = await other.nextOf('job.assign');
    t.same([again.jobId, again.attempt], [restartable, 2], 'another host gets it, the failed start counted');
    other.send({ type: 'job.accepted', jobId: restartable });
    await eventually(async () => (await readJob(server, restartable)).acceptedAt, 'acceptance');
    t.match(await readJob(server, restartable), { status: 'running', host: { id: otherId }, error: null });

    const once = await queueCommand(server, handle, { command: ['once'] });
    t.equal((await full.nextOf('job.assign')).jobId, once);
    full.send({ type: 'job.finished', jobId: once, outcome: 'failed', error, notStarted: true });
    await eventually(async () => (await status(once)) === 'failed', 'the job that cannot restart to fail');
    t.equal((await readJob(server, once)).error, error);
  },
);

t.test(
  'a host that ran an attempt whose acceptance was lost, back after its lease ran out: it keeps the job, nothing else starts it',
  async (t) => {
    const { handle } = await team();
    const jobId = await queueCommand(server, handle, { command: ['serve'] });
    const { client, workerKey, hostId } = await host(handle, 'unheard', []);
    t.equal((await client.nextOf('job.assign')).attempt, 1);
    // The agent started it, but its connection dropped before job.accepted reached the control plane.
    client.ws.terminate();
    await client.closed;
    await eventually(async () => (await status(jobId)) === 'queued', 'the unconfirmed attempt to be released');

    const { client: back } = await WorkerClient.welcomed(server, workerKey, {
      hardware: hardware([]),
      runningJobs: [{ jobId, attempt: 1 }],
    });
    t.teardown(() => back.ws.terminate());
    back.beat();
    t.ok(await back.quiet(1500), 'neither cancelled nor assigned again');
    t.match(await readJob(server, jobId), { status: 'running', host: { id: hostId }, acceptedAt: Date });
    back.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    await eventually(async () => (await status(jobId)) === 'completed', 'the job to complete');
  },
);

t.test(
  'two replicas: a job queued through one reaches a host connected to the other, and so does its cancel',
  async (t) => {
    const replica = await startTestServer(t, { env, databaseUrl: server.databaseUrl });
    const { handle, key } = await team();
    const { client } = await host(handle, 'far-away', [gpu(0)], replica);
    const jobId = await queueCommand(server, handle, { command: ['remote'] }, { gpuCount: 1 });
    t.equal((await client.nextOf('job.assign')).jobId, jobId, 'assigned on the other replica');
    client.send({ type: 'job.accepted', jobId });
    await eventually(async () => (await readJob(server, jobId)).acceptedAt, 'acceptance');
    t.equal((await call(server, 'DELETE', `/api/jobs/${jobId}`, { key })).status, 200);
    t.match(await client.nextOf('job.cancel'), { jobId });
    const availability = await call<{ gpus: Record<string, { total: number; free: number }> }>(
      server,
      'GET',
      '/api/training/gpu-availability?managed=true&detail=true',
      { key },
    );
    t.match(availability.body.gpus['rtx-4090'], { total: 1, free: 0 }, 'the busy GPU is not offered');
    client.send({ type: 'job.finished', jobId, outcome: 'cancelled' });
    await eventually(async () => (await status(jobId)) === 'cancelled', 'cancelled');
  },
);

t.test('disconnecting a host cancels its running jobs and closes its socket', async (t) => {
  const { handle } = await team();
  const { jobId, client } = await acceptedJob(handle, 'retired', 'x');
  await server.services().hosts.disconnect('retired', handle);
  t.match(await client.closed, { code: CLOSE.revoked });
  await eventually(async () => (await status(jobId)) === 'cancelled', 'the job to be cancelled');
  t.match(await readJob(server, jobId), { error: 'Cancelled' });
});

t.test(
  'protocol 1: an agent that sends no capabilities gets no export (a job needing a toolchain), the others as before',
  async (t) => {
    const { handle } = await team();
    const exportJob = await queueCommand(
      server,
      handle,
      { command: ['export'], outputs: [{ path: 'best.onnx', name: 'best.onnx' }] },
      { toolchain: 'onnx' },
    );
    const plain = await queueCommand(server, handle, { command: ['echo'] });
    const { client } = await host(handle, 'old-agent', [], server, { protocolVersion: 1 });
    t.equal((await client.nextOf('job.assign')).jobId, plain, 'the plain job');
    t.ok(await client.quiet(1000), 'nothing more');
    t.equal(await status(exportJob), 'queued', 'the export waits for a host that reports its toolchain');
    const { client: current } = await host(handle, 'new-agent', []);
    current.send({ type: 'capabilities', exporters: ['onnx'], missingExporters: {} });
    const assigned = await current.nextOf('job.assign');
    t.match(
      assigned,
      { jobId: exportJob, spec: { outputs: [{ path: 'best.onnx', name: 'best.onnx' }] } },
      'given once its capabilities arrived',
    );
  },
);
