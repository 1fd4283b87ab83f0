// A training whose host was lost while its trainer went on (the agent killed, the container kept training): the run
// is charged for what the trainer ran, once, and its end is when the trainer finished, not when the host came back.
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import type { z } from 'zod';
import { query } from '../control-plane/src/db/sql.ts';
import { ModelTraining } from '../control-plane/src/training/training.schemas.ts';
import { MetricsAnswer } from '../control-plane/src/webhooks/webhook.schemas.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const GRACE_SECONDS = 6;
const world = await startWorld(t, {
  RATE_LIMIT_TRAINING: '1000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: String(GRACE_SECONDS),
});
const { server, alice } = world;
const em = () => server.orm.em.fork() as EntityManager;
await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes', classNames: ['square', 'disc'] });
await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Detector' } });
const modelId = (
  await call<{ id: string }>(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', model: 'm1' } })
).body.id;
const metrics = (key: string, body: Record<string, unknown>) =>
  call<z.output<typeof MetricsAnswer>>(server, 'POST', '/api/webhooks/training/metrics', { key, body });
const training = async () =>
  (await call<z.output<typeof ModelTraining>>(server, 'GET', '/api/models/alice/detector/m1/training', { key: alice }))
    .body.job!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test('a trainer that completes while its agent is down: charged until it completed, ended then, once', async (t) => {
  const { workerKey } = await enrollHost(server, 'gpu-box');
  const { client } = await WorkerClient.welcomed(server, workerKey);
  client.beat(200);
  const started = await call<{ jobId: string }>(server, 'POST', '/api/training/start', {
    key: alice,
    body: {
      modelId,
      gpuType: 'rtx-4090',
      trainArgs: { model: 'yolo11n.yaml', data: 'ul://alice/datasets/shapes', epochs: 3, imgsz: 160 },
    },
  });
  t.equal(started.status, 200, JSON.stringify(started.body));
  const { jobId } = started.body;
  const assign = await client.nextOf('job.assign');
  const jobKey = assign.spec.env.ULTRALYTICS_API_KEY!;
  client.send({ type: 'job.accepted', jobId });
  const acceptedAt = Date.now();
  const { runId } = (
    await metrics(jobKey, { event: 'training_started', project: 'alice/detector', name: 'm1', data: { epochs: 3 } })
  ).body;
  await sleep(1000);
  // The agent is killed: its socket drops without a word, the trainer's container goes on reporting.
  client.ws.terminate();
  await client.closed;
  const lostAt = Date.now();
  for (const epoch of [0, 1, 2]) {
    await sleep(1000);
    t.equal(
      (await metrics(jobKey, { event: 'epoch_end', modelId, data: { epoch, metrics: {} } })).status,
      200,
      'the trainer reports while its host is silent',
    );
  }
  const complete = await metrics(jobKey, {
    event: 'training_complete',
    modelId,
    data: { runId, results: { metrics: { 'metrics/mAP50(B)': 0.5 } } },
  });
  t.equal(complete.status, 200, JSON.stringify(complete.body));
  const completedAt = Date.now();
  t.ok(completedAt - lostAt < GRACE_SECONDS * 1000, 'the trainer completed within the grace period');
  t.equal((await training()).status, 'completed', 'the run shows completed at once');
  await eventually(
    async () => (await training()).compute?.jobStatus === 'completed',
    "the lost host's job to end completed",
    20_000,
  );
  const ended = await training();
  const [job] = await query<{ run_seconds: number; finished_at: string }>(
    em(),
    'select run_seconds, finished_at from jobs where id = ?',
    [jobId],
  );
  const ran = (completedAt - acceptedAt) / 1000;
  t.ok(
    job!.run_seconds >= ran - 1 && job!.run_seconds <= ran + 1,
    `ran ${job!.run_seconds} s, as the trainer did (${ran} s), not until its host went silent`,
  );
  t.ok(
    Math.abs(new Date(job!.finished_at).getTime() - completedAt) < 1000,
    'the job ended when the trainer completed, not when its host was given up',
  );
  const charge = async () =>
    query<{ seconds: number }>(
      em(),
      "select (metadata->>'seconds')::float as seconds from credit_transactions where job_id = ? and kind = 'charge'",
      [jobId],
    );
  t.same(
    (await charge()).map((row) => row.seconds),
    [Math.ceil(job!.run_seconds)],
    'charged once, for that time',
  );
  t.ok(
    Math.abs(Date.parse(ended.progress.completedAt!) - completedAt) < 1000,
    'completedAt is when the trainer completed',
  );

  // The agent comes back with the job (its container has exited meanwhile) and reports its end.
  const { client: back } = await WorkerClient.welcomed(server, workerKey, {
    runningJobs: [{ jobId, attempt: 1, gpuIndexes: [0] }],
  });
  t.teardown(() => back.ws.terminate());
  t.match(await back.nextOf('job.cancel'), { jobId }, "the job is no longer the host's to run");
  back.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
  await sleep(500);
  t.equal((await training()).progress.completedAt, ended.progress.completedAt, 'completedAt did not move');
  t.same(
    (await charge()).map((row) => row.seconds),
    [Math.ceil(job!.run_seconds)],
    'not charged again',
  );
});

t.test(
  'a trainer that runs on while its host is lost, the job requeued, then its host comes back: charged what the host says it ran, once',
  async (t) => {
    const other = (
      await call<{ id: string }>(server, 'POST', '/api/models', {
        key: alice,
        body: { project: 'detector', model: 'm2' },
      })
    ).body.id;
    const { workerKey } = await enrollHost(server, 'gpu-two');
    const { client } = await WorkerClient.welcomed(server, workerKey);
    client.beat(200);
    const started = await call<{ jobId: string }>(server, 'POST', '/api/training/start', {
      key: alice,
      body: {
        modelId: other,
        gpuType: 'rtx-4090',
        trainArgs: { model: 'yolo11n.yaml', data: 'ul://alice/datasets/shapes', epochs: 3, imgsz: 160 },
      },
    });
    t.equal(started.status, 200, JSON.stringify(started.body));
    const { jobId } = started.body;
    const assign = await client.nextOf('job.assign');
    const jobKey = assign.spec.env.ULTRALYTICS_API_KEY!;
    client.send({ type: 'job.accepted', jobId });
    const trainerStarted = Date.now();
    const { runId } = (
      await metrics(jobKey, { event: 'training_started', project: 'alice/detector', name: 'm2', data: { epochs: 3 } })
    ).body;
    await sleep(1000);
    client.ws.terminate();
    await client.closed;
    const job = async () =>
      (
        await query<{ status: string; run_seconds: number; finished_at: string | null }>(
          em(),
          'select status, run_seconds, finished_at from jobs where id = ?',
          [jobId],
        )
      )[0]!;
    await eventually(async () => (await job()).status === 'queued', 'the lost attempt to be requeued', 20_000);
    t.ok((await job()).run_seconds < 2, 'counted until its host was last heard, for now');

    // The agent comes back: its trainer is still running, so it lists the job and keeps it (nobody else took it).
    const { client: back } = await WorkerClient.welcomed(server, workerKey, {
      runningJobs: [{ jobId, attempt: 1, gpuIndexes: [0] }],
    });
    t.teardown(() => back.ws.terminate());
    back.beat(200);
    await eventually(async () => (await job()).status === 'running', 'the host to take its attempt back');
    t.equal(
      (await metrics(jobKey, { event: 'training_complete', modelId: other, data: { runId, results: { metrics: {} } } }))
        .status,
      200,
      "the attempt's key works again",
    );
    await sleep(500);
    const ranSeconds = (Date.now() - trainerStarted) / 1000;
    const finished = {
      type: 'job.finished',
      jobId,
      outcome: 'completed',
      exitCode: 0,
      ranSeconds,
      endedSecondsAgo: 0.2,
    };
    back.send(finished);
    back.send(finished);
    await eventually(async () => (await job()).status === 'completed', 'the job to end');
    const ended = await job();
    t.ok(
      Math.abs(ended.run_seconds - ranSeconds) < 0.5,
      `ran ${ended.run_seconds} s: the host's measure (${ranSeconds} s), not until it was lost plus since it came back`,
    );
    t.ok(Math.abs(Date.parse(ended.finished_at!) - (Date.now() - 200)) < 1500, 'ended when the host says it exited');
    await sleep(300);
    const charges = await query<{ seconds: number }>(
      em(),
      "select (metadata->>'seconds')::float as seconds from credit_transactions where job_id = ? and kind = 'charge'",
      [jobId],
    );
    t.same(
      charges.map((row) => row.seconds),
      [Math.ceil(ended.run_seconds)],
      'charged once, for that time',
    );
  },
);
