// The job lifecycle through the API with a scripted worker host: concurrent starts make one job, a training whose
// dataset went to trash before it ran fails and frees its model, a training whose trainer reported completion is
// never run again when its host is lost, and PostgreSQL refuses every status move the state machine does not list.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Gpu } from '@vp/protocol';
import t from 'tap';
import type { z } from 'zod';
import { query } from '../control-plane/src/db/sql.ts';
import { JOB_STATUSES } from '../control-plane/src/jobs/job.entity.ts';
import { JobRead } from '../control-plane/src/jobs/job.schemas.ts';
import { JOB_TRANSITIONS } from '../control-plane/src/jobs/job-transitions.ts';
import { TrainingStarted } from '../control-plane/src/training/training.schemas.ts';
import { MetricsAnswer } from '../control-plane/src/webhooks/webhook.schemas.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const world = await startWorld(t, {
  RATE_LIMIT_TRAINING: '1000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '2',
});
const { server, alice } = world;
await server.services().billing.grant('alice', 100_000, 'test');
await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes', classNames: ['square'] });
await createDataset(world, alice, { dataset: 'doomed', name: 'Doomed', classNames: ['square'] });
await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Detector' } });
const newModel = async (model: string) =>
  (await call<{ id: string }>(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', model } })).body
    .id;
const args = (data = 'ul://alice/datasets/shapes') => ({ model: 'yolo11n.yaml', data, epochs: 3, imgsz: 32 });
const start = (modelId: string, data?: string) =>
  call<z.output<typeof TrainingStarted>>(server, 'POST', '/api/training/start', {
    key: alice,
    body: { modelId, gpuType: 'rtx-4090', trainArgs: args(data) },
  });
const modelOf = async (slug: string) =>
  (
    await call<{ model: { status: string; trainingError?: { message: string } } }>(
      server,
      'GET',
      `/api/models/alice/detector/${slug}`,
      { key: alice },
    )
  ).body.model;
const jobOf = async (jobId: string) =>
  (await call<z.output<typeof JobRead>>(server, 'GET', `/api/jobs/${jobId}`, { key: alice })).body.job;
const gpu: Gpu = {
  index: 0,
  model: 'NVIDIA GeForce RTX 4090',
  typeId: 'rtx-4090',
  memoryMiB: 24_564,
  driverVersion: '550.54',
};
const hardware = {
  cpu: { model: 'x', cores: 8 },
  memoryBytes: 2 ** 34,
  diskFreeBytes: 2 ** 36,
  gpus: [gpu],
  cpuOnly: false,
};
const { workerKey } = await enrollHost(server, 'gpu-box');
let host = (await WorkerClient.welcomed(server, workerKey, { hardware })).client;
t.teardown(() => host.ws.terminate());
host.beat();

t.test('concurrent starts of one model make one job; the others are told it is already training', async (t) => {
  const modelId = await newModel('raced');
  const answers = await Promise.all(Array.from({ length: 6 }, () => start(modelId)));
  t.same(
    answers.map((answer) => answer.status).sort((a, b) => a - b),
    [200, 409, 409, 409, 409, 409],
    JSON.stringify(answers.map((a) => a.body)),
  );
  const [jobs] = await query<{ count: string }>(
    server.orm.em.fork() as EntityManager,
    `select count(*) from jobs where subject_id = ? and kind = 'training'`,
    [modelId],
  );
  t.equal(Number(jobs.count), 1, 'one job for the model');
  const started = answers.find((answer) => answer.status === 200)!;
  const job = await jobOf(started.body.jobId);
  t.match(job, { kind: 'training', modelId, datasetId: null }, 'the job names its model, not as a dataset');
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  host.send({
    type: 'job.finished',
    jobId: assign.jobId,
    outcome: 'failed',
    exitCode: 1,
    error: 'exited with status 1',
  });
  await eventually(async () => (await modelOf('raced')).status === 'failed', 'the raced model to fail');
});

t.test(
  'a queued training whose dataset went to trash fails when its turn comes, and its model can train again',
  async (t) => {
    const blockerId = await newModel('blocker');
    const blocker = await start(blockerId);
    t.equal(blocker.status, 200);
    const blockerAssign = await host.nextOf('job.assign');
    host.send({ type: 'job.accepted', jobId: blockerAssign.jobId });
    const waitingId = await newModel('waiting');
    const waiting = await start(waitingId, 'ul://alice/datasets/doomed');
    t.equal(waiting.status, 200, JSON.stringify(waiting.body));
    t.equal(
      (await call(server, 'DELETE', '/api/datasets/alice/doomed', { key: alice })).status,
      200,
      'the dataset goes to trash',
    );
    host.send({ type: 'job.finished', jobId: blockerAssign.jobId, outcome: 'completed', exitCode: 0 });
    await eventually(async () => (await jobOf(waiting.body.jobId)).status === 'failed', 'the waiting job to fail');
    t.match((await jobOf(waiting.body.jobId)).error, /dataset was deleted/);
    const model = await modelOf('waiting');
    t.equal(model.status, 'failed', 'the model is not left training');
    t.match(model.trainingError, { message: /dataset was deleted/, timestamp: /^\d{4}-/ });
    const again = await start(waitingId);
    t.equal(again.status, 200, 'the model trains again with another dataset');
    const assign = await host.nextOf('job.assign');
    t.equal(assign.jobId, again.body.jobId);
    host.send({ type: 'job.accepted', jobId: assign.jobId });
    host.send({ type: 'job.finished', jobId: assign.jobId, outcome: 'cancelled' });
    await eventually(async () => (await jobOf(again.body.jobId)).status !== 'running', 'the retrained job to end');
  },
);

t.test('a training whose trainer reported completion is completed, not run again, when its host is lost', async (t) => {
  const modelId = await newModel('finished-alone');
  const started = await start(modelId);
  t.equal(started.status, 200);
  const assign = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assign.jobId });
  const key = assign.spec.env.ULTRALYTICS_API_KEY;
  const report = (body: Record<string, unknown>) =>
    call<z.output<typeof MetricsAnswer>>(server, 'POST', '/api/webhooks/training/metrics', { key, body });
  const run = await report({
    event: 'training_started',
    project: 'alice/detector',
    name: 'finished-alone',
    data: { epochs: 3 },
  });
  t.equal(run.status, 200);
  t.equal(
    (
      await report({
        event: 'training_complete',
        modelId,
        data: { runId: run.body.runId, results: { metrics: { 'metrics/mAP50(B)': 0.5 } } },
      })
    ).status,
    200,
  );
  // The agent is stopped before it can say the job ended, and stays away past the grace period.
  host.ws.terminate();
  await host.closed;
  await eventually(
    async () => (await jobOf(started.body.jobId)).status !== 'running',
    'the lost job to be released',
    20_000,
  );
  const job = await jobOf(started.body.jobId);
  t.match(
    job,
    { status: 'completed', attempts: 1, progress: { stage: 'done', percent: 100 } },
    'completed, not requeued',
  );
  t.equal((await modelOf('finished-alone')).status, 'completed');
  host = (await WorkerClient.welcomed(server, workerKey, { hardware })).client;
  host.beat();
  const next = await Promise.race([
    host.nextOf('job.assign').then(() => 'assigned'),
    new Promise((resolve) => setTimeout(() => resolve('nothing'), 1500)),
  ]);
  t.equal(next, 'nothing', 'the returning host is not given the training again');
});

t.test('PostgreSQL refuses every status move the state machine does not list', async (t) => {
  const em = server.orm.em.fork() as EntityManager;
  const [{ id: workspaceId }] = await query<{ id: string }>(em, `select id from workspaces where handle = 'alice'`);
  for (const from of JOB_STATUSES) {
    for (const to of JOB_STATUSES.filter((status) => status !== from)) {
      const [job] = await query<{ id: string }>(
        em,
        `insert into jobs (id, workspace_id, kind, status, created_at, updated_at) values (substr(md5(random()::text), 1, 24), ?, 'probe', ?, now(), now()) returning id`,
        [workspaceId, from],
      );
      const moved = await query(em, `update jobs set status = ? where id = ?`, [to, job.id]).then(
        () => true,
        (error: Error) => (/cannot go from/.test(error.message) ? false : Promise.reject(error)),
      );
      t.equal(moved, JOB_TRANSITIONS[from].includes(to), `${from} → ${to}`);
    }
  }
});
