// The training API and the trainer's webhooks against a scripted worker host (no trainer runs here; the real one
// runs in training-e2e): validation, 503 and 402, the command a host receives, the job key's scope and death,
// cancellation through the webhook answers, bring-your-own-compute naming, tenant isolation.
import type { Gpu, ServerMessage } from '@vp/protocol';
import t from 'tap';
import type { z } from 'zod';
import { ModelTraining, TrainingStarted } from '../control-plane/src/training/training.schemas.ts';
import { MetricsAnswer } from '../control-plane/src/webhooks/webhook.schemas.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const world = await startWorld(t, {
  RATE_LIMIT_TRAINING: '1000',
  WORKER_HEARTBEAT_SECONDS: '1',
  TRAINING_CANCEL_GRACE_SECONDS: '1',
  BILLING_ENFORCED: 'true',
});
const { server, alice, bobby } = world;
await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes', classNames: ['square', 'disc'] });
await createDataset(world, alice, { dataset: 'other', name: 'Other' });
await createDataset(world, bobby, { dataset: 'secret', name: 'Secret' });
await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Detector' } });
const modelId = (
  await call<{ id: string }>(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', model: 'm1' } })
).body.id;

const args = (overrides: Record<string, unknown> = {}) => ({
  model: 'yolo11n.yaml',
  data: 'ul://alice/datasets/shapes',
  epochs: 5,
  imgsz: 160,
  ...overrides,
});
/** Queued, or refused with `error`. */
const start = (body: Record<string, unknown>, key = alice) =>
  call<z.output<typeof TrainingStarted> & { error?: string }>(server, 'POST', '/api/training/start', {
    key,
    body: { modelId, gpuType: 'rtx-4090', ...body },
  });
const metrics = (key: string, body: Record<string, unknown>) =>
  call<z.output<typeof MetricsAnswer>>(server, 'POST', '/api/webhooks/training/metrics', { key, body });
const head = (key: string, path: string) =>
  fetch(`${server.url}${path}`, { method: 'HEAD', redirect: 'manual', headers: { authorization: `Bearer ${key}` } });
/** The scripted host outlives the test that connects it. */
const keepUntilEnd = (fn: () => void) => t.teardown(fn);
const gpu: Gpu = {
  index: 0,
  model: 'NVIDIA GeForce RTX 4090',
  typeId: 'rtx-4090',
  memoryMiB: 24_564,
  driverVersion: '550.54',
};

t.test(
  'refused before anything is queued: bad arguments 400, another workspace 404, no host 503, no credit 402',
  async (t) => {
    const refusals: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ trainArgs: { model: 'yolo11n.yaml', data: 'ul://alice/datasets/shapes' } }, 400, /epochs/],
      [{ trainArgs: args({ data: 'coco8.yaml' }) }, 400, /ul:\/\/owner\/datasets\/slug/],
      [{ trainArgs: args({ model: 'yolo11n.pt' }) }, 400, /downloads nothing/],
      [{ trainArgs: args({ project: 'elsewhere' }) }, 400, /set by the platform/],
      [{ trainArgs: args(), gpuType: 'tpu-9000' }, 400, /not a GPU type ID/],
      [{ trainArgs: args({ data: 'ul://bobby/datasets/secret' }) }, 404, /not found/],
      [{ trainArgs: args({ model: 'ul://alice/detector/m1' }) }, 400, /has no weights/],
      [{ trainArgs: args() }, 503, /No connected worker host has a rtx-4090 GPU/],
    ];
    for (const [body, status, error] of refusals) {
      const response = await start(body);
      t.equal(response.status, status, JSON.stringify(body));
      t.match(response.body.error, error);
    }
    t.equal((await start({ trainArgs: args() }, bobby)).status, 404, "another workspace's model");
    const { workerKey } = await enrollHost(server, 'gpu-box');
    hostKey = workerKey;
    const { client } = await WorkerClient.welcomed(server, workerKey, {
      hardware: {
        cpu: { model: 'x', cores: 8 },
        memoryBytes: 2 ** 34,
        diskFreeBytes: 2 ** 36,
        gpus: [gpu],
        cpuOnly: false,
      },
    });
    keepUntilEnd(() => client.ws.terminate());
    client.beat();
    hostClient = client;
    const poor = await start({ trainArgs: args() });
    t.equal(poor.status, 402);
    t.match(poor.body.error, /Insufficient credit/);
    const model = await call<{ model: { status: string } }>(server, 'GET', '/api/models/alice/detector/m1', {
      key: alice,
    });
    t.equal(model.body.model.status, 'pending', 'nothing changed');
    t.same((await call(server, 'GET', '/api/models/alice/detector/m1/training', { key: alice })).body, { job: null });
  },
);

let hostClient: WorkerClient;
let hostKey = '';
let jobKey = '';
let jobId = '';

t.test('started: the host gets plain `yolo train` with a job key; the key reaches only its job', async (t) => {
  await server.services().billing.grant('alice', 10_000, 'test');
  const started = await start({ trainArgs: args({ batch: 8, cos_lr: true }) });
  t.equal(started.status, 200, JSON.stringify(started.body));
  t.match(started.body, {
    modelId,
    status: 'starting',
    gpuType: 'rtx-4090',
    estimatedCost: { gpuMemoryGb: 24 },
    billing: { balanceCents: 10_000 },
  });
  jobId = started.body.jobId;
  t.equal((await start({ trainArgs: args() })).status, 409, 'already training');
  const assign = (await hostClient.nextOf('job.assign')) as Extract<ServerMessage, { type: 'job.assign' }>;
  const command = assign.spec.command;
  t.same(command.slice(0, 5), ['yolo', 'train', 'model=yolo11n.yaml', 'data=ul://alice/datasets/shapes', 'epochs=5']);
  t.same(command.slice(5, -4).sort(), ['batch=8', 'cos_lr=True', 'imgsz=160'], 'the other arguments as given');
  t.same(
    command.slice(-4),
    ['project=alice/detector', 'name=m1', 'exist_ok=True', 'device=0'],
    'where it reports, on its own GPU',
  );
  t.same(assign.spec.gpus, { count: 1, indexes: [0] });
  t.equal(assign.spec.env.ULTRALYTICS_PLATFORM_URL, server.url);
  jobKey = assign.spec.env.ULTRALYTICS_API_KEY;
  t.match(jobKey, /^ul_[0-9a-f]{40}$/);
  hostClient.send({ type: 'job.accepted', jobId });

  t.equal((await call(server, 'GET', '/api/account/summary', { key: jobKey })).status, 403, 'no account access');
  t.equal((await call(server, 'GET', '/api/datasets/alice', { key: jobKey })).status, 403, 'no listing');
  t.equal((await call(server, 'GET', '/api/datasets/alice/shapes/export', { key: jobKey })).status, 200, 'its dataset');
  const redirect = await head(jobKey, '/api/webhooks/datasets/alice/shapes/export');
  t.equal(redirect.status, 302);
  t.match(new URL(redirect.headers.get('location')!).pathname, /\.ndjson$/);
  t.equal(
    (await head(jobKey, '/api/webhooks/datasets/alice/other/export')).status,
    404,
    'another dataset of the same workspace',
  );
  t.equal((await head(jobKey, '/api/webhooks/models/alice/detector/m1/download')).status, 404, 'no weights yet');
  const listed = await call<{ keys: Array<{ name: string }> }>(server, 'GET', '/api/api-keys', { key: alice });
  t.notOk(JSON.stringify(listed.body).includes('training job'), 'job keys are not listed');
});

t.test(
  'events from the job key land on its model; a cancel is answered cancelled: true and reaches the host after the grace',
  async (t) => {
    const startedEvent = await metrics(jobKey, {
      event: 'training_started',
      project: 'alice/elsewhere',
      name: 'other',
      data: { epochs: 5, device: '0', trainArgs: { epochs: '5' } },
    });
    t.equal(startedEvent.status, 200);
    t.match(startedEvent.body, {
      received: true,
      event: 'training_started',
      mode: 'cloud',
      modelId,
      modelSlug: 'm1',
      cancelled: false,
    });
    const runId = startedEvent.body.runId;
    t.type(runId, 'number');
    const epoch = await metrics(jobKey, {
      event: 'epoch_end',
      modelId,
      data: { epoch: 0, metrics: { 'train/box_loss': 1.5, 'metrics/mAP50(B)': 0.25 }, fitness: 0.1, best_fitness: 0.1 },
    });
    t.match(epoch.body, { received: true, event: 'epoch_end', modelId, runId, cancelled: false });
    for (const chunkId of [1795000000001, 1795000000001]) {
      t.equal(
        (
          await metrics(jobKey, {
            event: 'console_output',
            modelId,
            data: { chunkId, content: '10:00:01 Epoch 1/5\n10:00:02 loss 1.5\n', lineCount: 2 },
          })
        ).status,
        200,
      );
    }
    const reading = await call<z.output<typeof ModelTraining>>(
      server,
      'GET',
      '/api/models/alice/detector/m1/training',
      { key: alice },
    );
    t.same(
      reading.body.job!.console,
      ['10:00:01 Epoch 1/5', '10:00:02 loss 1.5'],
      'console lines, a retried chunk kept once',
    );
    t.match(reading.body.job, {
      id: jobId,
      status: 'running',
      progress: { currentEpoch: 1, totalEpochs: 5, percentage: 20, startedAt: /^\d{4}-/ },
      timing: { elapsedMs: Number, timePerEpochMs: Number, etaMs: Number },
      compute: { gpuType: 'rtx-4090', gpuDisplayName: 'RTX 4090', gpuMemoryGb: 24, host: 'gpu-box' },
      epochMetrics: { 'train/box_loss': 1.5, 'metrics/mAP50(B)': 0.25 },
      error: null,
    });
    t.notOk('completedAt' in reading.body.job!.progress, 'not ended: no completedAt');
    t.equal(
      reading.body.job!.timing.etaMs,
      reading.body.job!.timing.timePerEpochMs * 4,
      'four epochs to go at the pace so far',
    );
    t.same(
      reading.body.job!.history.map((row: { epoch: number }) => row.epoch),
      [0],
    );
    t.equal(
      (
        await call<{ model: { metrics: Record<string, number> } }>(server, 'GET', '/api/models/alice/detector/m1', {
          key: alice,
        })
      ).body.model.metrics.mAP50,
      0.25,
    );
    t.equal(
      (await call(server, 'GET', '/api/models/alice/detector/m1/training', { key: bobby })).status,
      404,
      'another workspace',
    );
    const poolHost = async (key: string) =>
      (
        await call<{ hosts: Array<{ name: string; pool: boolean; runningJobs: string[] }> }>(
          server,
          'GET',
          '/api/hosts',
          { key },
        )
      ).body.hosts.find((host) => host.name === 'gpu-box');
    t.match(
      await poolHost(alice),
      { pool: true, runningJobs: [jobId] },
      'the pool host is listed with the job it runs for this workspace',
    );
    t.match(
      await poolHost(bobby),
      { pool: true, runningJobs: [] },
      "another workspace sees the pool host, not alice's job",
    );

    t.match((await call(server, 'DELETE', '/api/models/alice/detector/m1/training', { key: alice })).body, {
      success: true,
      status: 'cancelled',
      warning: /stops after its current epoch/,
    });
    t.match(
      (await metrics(jobKey, { event: 'epoch_end', modelId, data: { epoch: 1, metrics: {} } })).body,
      { cancelled: true },
      'the trainer hears it',
    );
    t.match(await hostClient.nextOf('job.cancel'), { jobId }, 'the host is told to stop it after the grace');
    hostClient.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    await eventually(
      async () =>
        (
          await call<{ job: { status: string } }>(server, 'GET', '/api/models/alice/detector/m1/training', {
            key: alice,
          })
        ).body.job.status === 'cancelled',
      'cancelled',
    );
    // The key is deleted as the job ends, and every replica's key cache is told (NOTIFY): at once, but not in the same instant.
    await eventually(
      async () =>
        (await metrics(jobKey, { event: 'console_output', modelId, data: { chunkId: 1, content: 'late' } })).status ===
        401,
      'the job key to die with the job',
      5000,
    );
    t.pass('the job key died with the job');
    t.equal(
      (await call<{ model: { status: string } }>(server, 'GET', '/api/models/alice/detector/m1', { key: alice })).body
        .model.status,
      'cancelled',
    );
  },
);

t.test(
  'bring your own compute: training_started by project and name creates them; a trained name gets the next free one',
  async (t) => {
    const first = await metrics(alice, {
      event: 'training_started',
      project: 'alice/My Laptop',
      name: 'train',
      data: { epochs: 1 },
    });
    t.match(first.body, { received: true, mode: 'remote', modelSlug: 'train', cancelled: false });
    await metrics(alice, {
      event: 'epoch_end',
      modelId: first.body.modelId,
      data: { epoch: 0, metrics: { 'metrics/mAP50(B)': 0.5, lr: null }, fitness: 0.4 },
    });
    // As the trainer sends them: rows [image hash, tp, fp, fn], and the extremes among 3 images scored.
    const validation = {
      population: 3,
      rows: [
        ['img-1', 2, 0, 1],
        ['img-2', 0, 1, 0],
      ],
      extremes: { worst: [['img-2', 0, 1, 0]], best: [['img-1', 2, 0, 1]] },
    };
    const plots = [{ type: 'pr_curve', x: [0, 1], y: [[1, 0]], ap: [0.5] }];
    await metrics(alice, {
      event: 'training_complete',
      modelId: first.body.modelId,
      data: {
        runId: first.body.runId,
        results: { metrics: { 'metrics/mAP50(B)': 0.5 }, bestEpoch: 0, bestFitness: 0.4, validation },
        classNames: ['a'],
        plots,
      },
    });
    const analysis = await call<{ analysis: unknown }>(server, 'GET', '/api/models/alice/my-laptop/train?analysis=1', {
      key: alice,
    });
    t.match(
      analysis.body.analysis,
      {
        population: 3,
        retained: 2,
        coverage: { mode: 'sampled' },
        scatterSample: {
          rows: [
            ['img-1', 2, 0, 1],
            ['img-2', 0, 1, 0],
          ],
        },
        cohorts: {
          worst: { count: 1, examples: [{ hash: 'img-2', f1: 0 }] },
          best: { count: 1, examples: [{ hash: 'img-1', f1: 0.8 }] },
        },
      },
      'the per-image validation rows, with the extremes the trainer picked',
    );
    const results = await call<{ model: Record<string, unknown> }>(server, 'GET', '/api/models/alice/my-laptop/train', {
      key: alice,
    });
    t.match(
      results.body.model,
      {
        plots,
        bestEpoch: 0,
        classNames: ['a'],
        trainResults: [{ epoch: 0, metrics: { 'metrics/mAP50(B)': 0.5 }, fitness: 0.4, timestamp: /^\d{4}-/ }],
      },
      'plots and per-epoch results',
    );
    t.same(
      Object.keys((results.body.model.trainResults as Array<{ metrics: object }>)[0]!.metrics),
      ['metrics/mAP50(B)'],
      'only numeric metrics',
    );
    const second = await metrics(alice, {
      event: 'training_started',
      project: 'alice/My Laptop',
      name: 'train',
      data: { epochs: 1 },
    });
    t.equal(second.body.modelSlug, 'train-2');
    t.not(second.body.modelId, first.body.modelId);
    // At once: a run silent past TRAINING_CANCEL_GRACE_SECONDS (1 s here) would be cancelled outright, not told.
    t.match((await call(server, 'DELETE', '/api/models/alice/my-laptop/train-2/training', { key: alice })).body, {
      success: true,
      status: 'cancelled',
      warning: String,
    });
    t.match(
      (await metrics(alice, { event: 'epoch_end', modelId: second.body.modelId, data: { epoch: 0, metrics: {} } }))
        .body,
      { cancelled: true },
      'a run on your own machine hears a cancel too',
    );
    const reading = await call<{ model: { status: string; metrics: Record<string, number>; bestFitness: number } }>(
      server,
      'GET',
      '/api/models/alice/my-laptop/train',
      { key: alice },
    );
    t.match(reading.body.model, { status: 'completed', metrics: { mAP50: 0.5 }, bestFitness: 0.4 });
    t.equal(
      (await metrics(alice, { event: 'training_started', project: 'bobby/x', name: 'y', data: {} })).status,
      403,
      "another workspace's project",
    );
    t.equal(
      (await metrics(bobby, { event: 'epoch_end', modelId: first.body.modelId, data: { epoch: 0 } })).status,
      404,
      "another workspace's model",
    );
  },
);

t.test('a training cancelled while it waits for a GPU, through /api/jobs, leaves its model cancelled', async (t) => {
  const busyId = (
    await call<{ id: string }>(server, 'POST', '/api/models', {
      key: alice,
      body: { project: 'detector', model: 'busy' },
    })
  ).body.id;
  const waitingId = (
    await call<{ id: string }>(server, 'POST', '/api/models', {
      key: alice,
      body: { project: 'detector', model: 'waiting' },
    })
  ).body.id;
  const busy = await start({ modelId: busyId, trainArgs: args() });
  t.equal(busy.status, 200);
  const assigned = await hostClient.nextOf('job.assign');
  t.equal(assigned.jobId, busy.body.jobId, 'the only GPU is taken');
  const waiting = await start({ modelId: waitingId, trainArgs: args() });
  t.equal(waiting.status, 200);
  t.same((await call(server, 'DELETE', `/api/jobs/${waiting.body.jobId}`, { key: alice })).body, {
    success: true,
    status: 'cancelled',
  });
  await eventually(
    async () =>
      (await call<{ model: { status: string } }>(server, 'GET', '/api/models/alice/detector/waiting', { key: alice }))
        .body.model.status === 'cancelled',
    'the waiting model to be cancelled',
  );
  t.pass('the model of the cancelled job is cancelled, not left training');
  hostClient.send({
    type: 'job.finished',
    jobId: busy.body.jobId,
    outcome: 'failed',
    exitCode: 1,
    error: 'exited with status 1',
  });
  await eventually(
    async () =>
      (
        await call<{ model: { status: string; trainingError: string | null } }>(
          server,
          'GET',
          '/api/models/alice/detector/busy',
          { key: alice },
        )
      ).body.model.status === 'failed',
    'the failed training to fail its model',
  );
});

t.test('a job key works while its attempt runs and is refused as soon as the host loses the attempt', async (t) => {
  const lostId = (
    await call<{ id: string }>(server, 'POST', '/api/models', {
      key: alice,
      body: { project: 'detector', model: 'lost' },
    })
  ).body.id;
  const started = await start({ modelId: lostId, trainArgs: args() });
  t.equal(started.status, 200, JSON.stringify(started.body));
  const assign = await hostClient.nextOf('job.assign');
  t.equal(assign.jobId, started.body.jobId);
  const key = assign.spec.env.ULTRALYTICS_API_KEY;
  hostClient.send({ type: 'job.accepted', jobId: assign.jobId });
  const report = () =>
    metrics(key, {
      event: 'console_output',
      modelId: lostId,
      data: { chunkId: 1795000000100, content: 'epoch 1\n', lineCount: 1 },
    });
  t.equal(
    (await metrics(key, { event: 'training_started', project: 'alice/detector', name: 'lost', data: { epochs: 5 } }))
      .status,
    200,
  );
  t.equal((await report()).status, 200, 'the key works while its attempt runs');
  // The host comes back without the job (its agent restarted), and without a GPU, so nothing takes the job again yet.
  hostClient.ws.terminate();
  await hostClient.closed;
  const { client: back } = await WorkerClient.welcomed(server, hostKey, {
    hardware: { cpu: { model: 'x', cores: 8 }, memoryBytes: 2 ** 34, diskFreeBytes: 2 ** 36, gpus: [], cpuOnly: true },
  });
  keepUntilEnd(() => back.ws.terminate());
  await eventually(
    async () =>
      (await call<{ job: { status: string } }>(server, 'GET', `/api/jobs/${assign.jobId}`, { key: alice })).body.job
        .status === 'queued',
    'the attempt to be released',
  );
  const refused = await report();
  t.equal(refused.status, 401, "the released attempt's key is refused at once, although it was cached");
  t.same(refused.body, { error: 'Invalid API key' });
});
