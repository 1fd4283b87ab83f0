// Deployments' lifecycle against a real control plane: the API's rules and shapes, the service job each revision runs
// (its spec), rollout and rollback, stop and start, scale to zero and wake through the DeploymentRouter, a lost host's
// revision restarted on another, deletes. The hosts are scripted agents (test/helpers/worker-client.ts) that speak
// protocol 3 by hand: they accept the service jobs and report job.service as the real agent does once its server
// answers its health check, so what is checked here is the control plane's side of it.
import { readFileSync } from 'node:fs';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { JobSpec, ServerMessage } from '@vp/protocol';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const fixture = await trainedModel('detect');
/** Above the DeploymentRouter's 5 s batching of touched(), so requests keep a deployment awake. */
const IDLE_SECONDS = 6;
const world = await startWorld(t, {
  HOST_LOST_GRACE_SECONDS: '2',
  DEPLOYMENT_IDLE_SECONDS: String(IDLE_SECONDS),
  DEPLOYMENT_WAKE_SECONDS: '20',
  RATE_LIMIT_MUTATION: '1000',
});
const { server, alice, bobby, viewer } = world;

interface Deployment {
  id: string;
  deployment: string;
  status: string;
  statusMessage?: string;
  serviceUrl: string;
  model: string;
  resources: { cpu: number; memoryGi: number; minInstances: number; maxInstances: number };
  metered: boolean;
  apiKeyId?: string;
  deployedAt?: string;
  metadata: Record<string, unknown>;
}
type Assignment = Extract<ServerMessage, { type: 'job.assign' }>;

async function servable(project: string, slug: string): Promise<string> {
  const model = await createModel(world, alice, {
    project,
    model: slug,
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
  await seedOnnxExport(server, model.id, fixture.onnx);
  return model.id;
}

await createProject(world, alice, { project: 'vision', name: 'vision' });
await createProject(world, alice, { project: 'open', name: 'open', visibility: 'public' });
await servable('vision', 'detector');
await servable('vision', 'detector-v2');
await servable('open', 'shared');
await createModel(world, alice, { project: 'vision', model: 'empty', task: 'detect' });

/** A host that runs inference servers (in `region`, else every region), heartbeating until the test ends. */
async function inferenceHost(name: string, region?: string, exporters: string[] = []): Promise<WorkerClient> {
  const { workerKey } = await enrollHost(server, name, undefined, region);
  const { client } = await WorkerClient.welcomed(server, workerKey);
  client.beat(300);
  client.send({ type: 'capabilities', exporters, missingExporters: {}, services: ['inference'] });
  t.teardown(() => client.ws.close());
  // Capabilities are recorded asynchronously: a deployment created before that finds no host for it.
  await eventually(
    async () =>
      (
        await query<{ n: number }>(
          em(),
          `select count(*)::int as n from hosts where name = ? and 'inference' = any(services)`,
          [name],
        )
      )[0]!.n > 0,
    `${name} to report its services`,
  );
  return client;
}

/** The host takes its next assignment and, as its agent does once the server answers /health, reports it at `url`. */
async function serve(host: WorkerClient, url: string): Promise<Assignment> {
  // The revision is assigned once the model's ONNX export is found by the rollout sweep: slower on a loaded machine.
  const assigned = await host.nextOf('job.assign', 60_000);
  host.send({ type: 'job.accepted', jobId: assigned.jobId });
  host.send({ type: 'job.service', jobId: assigned.jobId, url });
  return assigned;
}

/** The host is told to stop the job and says it did. */
async function stopped(host: WorkerClient, jobId: string): Promise<void> {
  const cancel = await host.nextOf('job.cancel');
  t.equal(cancel.jobId, jobId, 'the host is told to stop that job');
  host.send({ type: 'job.finished', jobId, outcome: 'cancelled', exitCode: 143 });
}

const create = (body: Record<string, unknown>, key = alice) =>
  call<Record<string, string>>(server, 'POST', '/api/deployments/alice', { key, body });
const read = async (slug: string, key = alice) =>
  (await call<{ deployment: Deployment }>(server, 'GET', `/api/deployments/alice/${slug}`, { key })).body.deployment;
const patch = (slug: string, body: Record<string, unknown>, key = alice) =>
  call<Record<string, string>>(server, 'PATCH', `/api/deployments/alice/${slug}`, { key, body });
const untilStatus = (slug: string, status: string, timeoutMs = 20_000) =>
  eventually(
    async () => {
      const deployment = await read(slug);
      return deployment.status === status && deployment;
    },
    `${slug} ${status}`,
    timeoutMs,
  );
const em = () => server.orm.em.fork() as EntityManager;
const events = async (id: string) =>
  await query<{ severity: string; message: string }>(
    em(),
    'select severity, message from deployment_events where deployment_id = ? order by id',
    [id],
  );

t.test('create: validation, and 503 when no host runs inference in the region', async (t) => {
  const body = { project: 'vision', model: 'detector', deployment: 'early', name: 'early', region: 'us-central1' };
  const refused = await create(body);
  t.equal(refused.status, 503, JSON.stringify(refused.body));
  t.match(refused.body.error, /us-central1/);
  await inferenceHost('validation-host', 'us-central1');
  for (const [change, pattern] of [
    [{ region: 'mars-north1' }, /region/],
    [{ cpu: 3 }, /cpu/],
    [{ memoryGi: 3 }, /memoryGi/],
    [{ deployment: 'Not A Slug' }, /deployment/],
    [{ model: 'empty' }, /no weights/],
  ] as const) {
    const answer = await create({ ...body, ...change });
    t.equal(answer.status, 400, JSON.stringify(change));
    t.match(answer.body.error, pattern);
  }
  t.equal((await create({ ...body, model: 'missing' })).status, 404);
  t.equal((await create(body, bobby)).status, 403, "another workspace's key cannot deploy in alice's");
  t.equal((await create({ ...body, region: 'europe-west4' })).status, 503, 'a host of another region does not count');
});

t.test(
  'create → deploying → ready: the revision is a service job with the model, its size and its token',
  async (t) => {
    const host = await inferenceHost('api-host', 'us-west2');
    const created = await create({
      project: 'vision',
      model: 'detector',
      deployment: 'api',
      name: 'API',
      region: 'us-west2',
      cpu: 2,
      memoryGi: 4,
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    t.match(created.body, { deployment: 'api', status: 'creating', region: 'us-west2', apiKey: /^ul_/ });
    t.equal(
      (await create({ project: 'vision', model: 'detector', deployment: 'api', name: 'API', region: 'us-west2' }))
        .status,
      409,
      'the URL name is taken',
    );

    const assigned = await serve(host, 'http://127.0.0.1:18080');
    const spec: JobSpec = assigned.spec;
    t.match(spec, {
      environment: 'inference',
      command: ['vp-inference-server'],
      cpus: 2,
      memoryBytes: 4 * 2 ** 30,
      service: { port: 8080, healthPath: '/health' },
    });
    t.match(spec.env, { VP_MODEL_FILE: 'model.onnx', VP_SERVICE_TOKEN: /^[0-9a-f]{64}$/, VP_MAX_BYTES: /^\d+$/ });
    const download = await fetch(spec.inputs![0]!.url);
    t.same(
      Buffer.from(await download.arrayBuffer()),
      readFileSync(fixture.onnx),
      "the job's input is the model's ONNX export",
    );

    const ready = await untilStatus('api', 'ready');
    t.match(ready, {
      id: created.body.id,
      model: 'detector',
      serviceUrl: `${server.url}/svc/${created.body.id}`,
      resources: { cpu: 2, memoryGi: 4, minInstances: 1, maxInstances: 1 },
      metered: true,
    });
    t.ok(ready.deployedAt && ready.apiKeyId, 'deployedAt and its own key');
    const upstream = await server.deploymentRouter.upstream(em(), created.body.id);
    t.match(upstream, {
      url: 'http://127.0.0.1:18080',
      token: spec.env.VP_SERVICE_TOKEN,
      workspaceId: /^[0-9a-f]{24}$/,
    });
    t.match(
      (await events(created.body.id)).map((event) => event.message),
      [/^creating/, /Revision 1 starting/, /^deploying/, /^ready: revision 1 is live/],
    );

    t.test('rename: the slug follows, the old path is 404, the service URL stays', async (t) => {
      const renamed = await patch('api', { name: 'Front Door' });
      t.equal(renamed.status, 200);
      t.equal(renamed.body.deployment, 'front-door');
      t.equal((await call(server, 'GET', '/api/deployments/alice/api', { key: alice })).status, 404);
      t.equal((await read('front-door')).serviceUrl, ready.serviceUrl);
      t.equal((await patch('front-door', { name: 'API' })).body.deployment, 'api');
    });

    t.test('metadata: set, and cleared by an empty object', async (t) => {
      t.equal((await patch('api', { metadata: { team: 'vision', level: 2 } })).status, 200);
      t.same((await read('api')).metadata, { team: 'vision', level: 2 });
      await patch('api', { metadata: {} });
      t.same((await read('api')).metadata, {});
      t.equal((await patch('api', { name: 'x', metadata: {} })).status, 400, 'one change per call');
      t.equal((await patch('api', { action: 'explode' })).status, 400);
    });

    t.test('who sees and changes it', async (t) => {
      t.equal(
        (await call(server, 'GET', '/api/deployments/alice/api', { key: bobby })).status,
        404,
        'a private model’s deployment is hidden',
      );
      t.equal(
        (await call(server, 'GET', '/api/deployments/alice')).status,
        401,
        'anonymous must filter by a public model',
      );
      t.equal((await call(server, 'GET', '/api/deployments/alice', { key: bobby })).status, 403);
      t.equal(
        (await call(server, 'GET', '/api/deployments/alice?model=vision/detector', { key: bobby })).status,
        404,
        'a private model is 404',
      );
      t.equal(
        (await patch('api', { metadata: {} }, viewer)).status,
        404,
        "a team key does not reach alice's deployments",
      );
      const list = await call<{ deployments: Deployment[]; total: number }>(
        server,
        'GET',
        '/api/deployments/alice?status=ready&model=vision/detector',
        { key: alice },
      );
      t.same(
        list.body.deployments.map((d) => d.deployment),
        ['api'],
      );
      t.equal(list.body.total, 1);
      const deploymentKey = created.body.apiKey!;
      t.equal(
        (await call(server, 'GET', '/api/deployments/alice/api', { key: deploymentKey })).status,
        403,
        'the deployment key reaches only its predict and service URL',
      );
    });

    t.test('stop → stopping → stopped (its server stopped), start → deploying → ready', async (t) => {
      const stopping = await patch('api', { action: 'stop' });
      t.equal(stopping.status, 202);
      t.equal(stopping.body.status, 'stopping');
      await t.rejects(
        server.deploymentRouter.upstream(em(), created.body.id),
        { message: /is stopping/ },
        'a stopping deployment takes no request (503)',
      );
      await stopped(host, assigned.jobId);
      await untilStatus('api', 'stopped');
      t.equal((await patch('api', { action: 'stop' })).status, 200, 'stopping a stopped deployment is done already');
      const started = await patch('api', { action: 'start' });
      t.equal(started.status, 202);
      t.equal(started.body.status, 'deploying');
      const again = await serve(host, 'http://127.0.0.1:18081');
      t.not(again.jobId, assigned.jobId, 'a new revision');
      await untilStatus('api', 'ready');
      t.equal((await server.deploymentRouter.upstream(em(), created.body.id)).url, 'http://127.0.0.1:18081');
    });

    t.test('delete: its server stops, its key is revoked, the name is free again', async (t) => {
      const [live] = await query<{ job_id: string }>(
        em(),
        `select job_id from deployment_revisions where deployment_id = ? and state = 'live'`,
        [created.body.id],
      );
      t.same((await call(server, 'DELETE', '/api/deployments/alice/api', { key: alice })).body, { success: true });
      await stopped(host, live!.job_id);
      t.equal((await call(server, 'GET', '/api/deployments/alice/api', { key: alice })).status, 404);
      t.equal(
        (await call(server, 'GET', '/api/deployments/alice/api', { key: created.body.apiKey })).status,
        401,
        'its key is gone',
      );
    });
  },
);

t.test(
  'a model whose ONNX export is still being made: the revision waits for it, and fails once it is gone',
  async (t) => {
    // It takes the ONNX export and never finishes it: the export stays running while the rollout sweep (every second)
    // looks at the revision.
    const exporter = await inferenceHost('export-wait-host', 'asia-northeast1', ['onnx']);
    const model = await createModel(world, alice, { project: 'vision', model: 'exporting', task: 'detect' });
    await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
    const created = await create({
      project: 'vision',
      model: 'exporting',
      deployment: 'waits',
      name: 'waits',
      region: 'asia-northeast1',
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    const exporting = await exporter.nextOf('job.assign');
    exporter.send({ type: 'job.accepted', jobId: exporting.jobId });
    await new Promise((resolve) => setTimeout(resolve, 3500));
    t.match(
      await read('waits'),
      { status: 'creating' },
      'still creating while its export runs (it was failed at once)',
    );
    t.notOk(
      (await events(created.body.id)).some((event) => event.severity === 'ERROR'),
      'no failure logged while it waits',
    );
    await query(em(), 'delete from model_exports where model_id = ?', [model.id]);
    const failed = await untilStatus('waits', 'failed');
    t.match(failed.statusMessage, /ONNX export was deleted/, 'an export that is gone fails the revision, saying so');
    exporter.send({ type: 'job.finished', jobId: exporting.jobId, outcome: 'cancelled', exitCode: 143 });
  },
);

t.test('replace: a failing revision is rolled back, a healthy one takes over with zero downtime', async (t) => {
  const host = await inferenceHost('rollout-host', 'europe-west4');
  const created = await create({
    project: 'vision',
    model: 'detector',
    deployment: 'rollout',
    name: 'rollout',
    region: 'europe-west4',
    cpu: 2,
    memoryGi: 4,
  });
  const first = await serve(host, 'http://127.0.0.1:18090');
  await untilStatus('rollout', 'ready');

  const replacing = await patch('rollout', { action: 'replace', model: 'detector-v2' });
  t.equal(replacing.status, 202, JSON.stringify(replacing.body));
  t.equal(replacing.body.status, 'deploying');
  t.equal((await patch('rollout', { action: 'replace', model: 'detector-v2' })).status, 409, 'one rollout at a time');
  const failing = await host.nextOf('job.assign');
  t.equal(
    (await server.deploymentRouter.upstream(em(), created.body.id)).url,
    'http://127.0.0.1:18090',
    'the live revision serves during the rollout',
  );
  host.send({ type: 'job.accepted', jobId: failing.jobId });
  host.send({
    type: 'job.finished',
    jobId: failing.jobId,
    outcome: 'failed',
    exitCode: 1,
    error: 'the model did not load',
  });
  const rolledBack = await untilStatus('rollout', 'ready');
  t.match(rolledBack, {
    model: 'detector',
    statusMessage: /Revision 2 failed: the model did not load; still serving revision 1/,
  });
  t.equal(
    (await server.deploymentRouter.upstream(em(), created.body.id)).url,
    'http://127.0.0.1:18090',
    'still on the old revision',
  );
  t.ok(
    (await events(created.body.id)).some(
      (event) => event.severity === 'ERROR' && /rolled back to revision 1/.test(event.message),
    ),
    'an ERROR log entry says why',
  );

  t.equal((await patch('rollout', { action: 'resize', cpu: 4, memoryGi: 8 })).status, 202);
  const bigger = await host.nextOf('job.assign');
  t.match(bigger.spec, { cpus: 4, memoryBytes: 8 * 2 ** 30 });
  host.send({ type: 'job.accepted', jobId: bigger.jobId });
  host.send({ type: 'job.service', jobId: bigger.jobId, url: 'http://127.0.0.1:18091' });
  await stopped(host, first.jobId);
  const resized = await untilStatus('rollout', 'ready');
  t.match(resized, { resources: { cpu: 4, memoryGi: 8 }, serviceUrl: `${server.url}/svc/${created.body.id}` });
  t.notOk(resized.statusMessage, 'the failure message is cleared once a revision went live');
  t.equal(
    (await server.deploymentRouter.upstream(em(), created.body.id)).url,
    'http://127.0.0.1:18091',
    'traffic switched to the new revision',
  );
});

t.test('camera: refused on the default size', async (t) => {
  await inferenceHost('camera-host', 'us-south1');
  await create({ project: 'vision', model: 'detector', deployment: 'small', name: 'small', region: 'us-south1' });
  const answer = await patch('small', { action: 'camera', url: 'rtsp://127.0.0.1:8554/cam' });
  t.equal(answer.status, 403);
  t.equal(
    (await patch('small', { action: 'camera', url: 'http://example.com/cam' })).status,
    400,
    'only rtsp:// or rtsps://',
  );
});

t.test(
  'a default-size deployment idle for DEPLOYMENT_IDLE_SECONDS scales to zero; the next request wakes it',
  async (t) => {
    const host = await inferenceHost('idle-host', 'asia-east1');
    const created = await create({
      project: 'vision',
      model: 'detector',
      deployment: 'idle',
      name: 'idle',
      region: 'asia-east1',
    });
    const first = await serve(host, 'http://127.0.0.1:18100');
    const ready = await untilStatus('idle', 'ready');
    t.match(ready.resources, { cpu: 1, memoryGi: 2, minInstances: 0 });
    t.equal(ready.metered, false);
    await stopped(host, first.jobId);
    t.equal((await read('idle')).status, 'ready', 'scaled to zero, it still reads ready');
    const [row] = await query<{ scaled_to_zero: boolean }>(
      em(),
      'select scaled_to_zero from deployments where id = ?',
      [created.body.id],
    );
    t.ok(row!.scaled_to_zero);

    const started = Date.now();
    const waking = Promise.all([
      server.deploymentRouter.upstream(em(), created.body.id),
      server.deploymentRouter.upstream(em(), created.body.id),
    ]);
    const woke = await serve(host, 'http://127.0.0.1:18101');
    const upstreams = await waking;
    t.same(
      upstreams.map((upstream) => upstream.url),
      ['http://127.0.0.1:18101', 'http://127.0.0.1:18101'],
      'both waiting requests get the woken server',
    );
    t.comment(`woken in ${Date.now() - started} ms`);
    const [revisions] = await query<{ count: number }>(
      em(),
      'select count(*)::int as count from deployment_revisions where deployment_id = ?',
      [created.body.id],
    );
    t.equal(revisions!.count, 2, 'two racing requests started one revision');
    t.not(woke.jobId, first.jobId);

    // Requests keep it awake: touched() restarts the idle clock.
    const until = Date.now() + (IDLE_SECONDS + 4) * 1000;
    while (Date.now() < until) {
      server.deploymentRouter.touched(created.body.id);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    t.ok(await host.quiet(100), 'no cancel while it is busy');
  },
);

t.test('a lost host: the revision is restarted on another host of the region, deploying until it serves', async (t) => {
  const doomed = await inferenceHost('lost-host-a', 'us-east1');
  const created = await create({
    project: 'vision',
    model: 'detector',
    deployment: 'survivor',
    name: 'survivor',
    region: 'us-east1',
    cpu: 2,
    memoryGi: 4,
  });
  const first = await serve(doomed, 'http://127.0.0.1:18110');
  await untilStatus('survivor', 'ready');
  const spare = await inferenceHost('lost-host-b', 'us-east1');
  doomed.ws.terminate();
  await untilStatus('survivor', 'deploying');
  const restarted = await spare.nextOf('job.assign', 20_000);
  t.equal(restarted.jobId, first.jobId, 'the same revision, its next attempt');
  spare.send({ type: 'job.accepted', jobId: restarted.jobId });
  spare.send({ type: 'job.service', jobId: restarted.jobId, url: 'http://127.0.0.1:18111' });
  await untilStatus('survivor', 'ready');
  t.equal((await server.deploymentRouter.upstream(em(), created.body.id)).url, 'http://127.0.0.1:18111');
});

t.test('deleting a model deletes its deployments for good', async (t) => {
  const host = await inferenceHost('delete-host', 'us-west1');
  await servable('vision', 'doomed');
  await create({
    project: 'vision',
    model: 'doomed',
    deployment: 'doomed',
    name: 'doomed',
    region: 'us-west1',
    cpu: 2,
    memoryGi: 4,
  });
  const serving = await serve(host, 'http://127.0.0.1:18120');
  await untilStatus('doomed', 'ready');
  t.equal((await call(server, 'DELETE', '/api/models/alice/vision/doomed', { key: alice })).status, 200);
  await stopped(host, serving.jobId);
  t.equal((await call(server, 'GET', '/api/deployments/alice/doomed', { key: alice })).status, 404);
});

t.test('hosts take an optional region, one of the 42', async (t) => {
  const refused = await call<{ error: string }>(server, 'POST', '/api/hosts', {
    key: alice,
    body: { name: 'moon-host', region: 'moon-1' },
  });
  t.equal(refused.status, 400);
  t.match(refused.body.error, /region/);
  t.equal(
    (await call(server, 'POST', '/api/hosts', { key: alice, body: { name: 'eu-host', region: 'europe-west1' } }))
      .status,
    201,
  );
  const listed = await call<{ hosts: Array<{ name: string; region: string | null; services: string[] }> }>(
    server,
    'GET',
    '/api/hosts',
    { key: alice },
  );
  t.match(
    listed.body.hosts.find((host) => host.name === 'eu-host'),
    { region: 'europe-west1', services: [] },
  );
  await t.rejects(
    server.services().hosts.connect('cli-host', undefined, 'moon-1'),
    { message: /region/ },
    'vpctl hosts connect --region checks it too',
  );
});
