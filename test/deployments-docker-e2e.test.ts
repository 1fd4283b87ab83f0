// A deployment served from a container: a real vp-worker agent on the Docker runtime runs the locally built
// vp-inference image (installer/inference/build-inference-image.sh) with the deployment's CPU and memory as the
// container's limits; its predictions through the service URL and the platform equal the control plane's own predict
// of the model, and stopping the deployment removes the container.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { dockerForTests, requireLocalImage } from './helpers/docker.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { predictAt } from './helpers/inference-server.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';

t.setTimeout(10 * 60_000);
const IMAGE = 'vp-inference:latest';
const { docker } = await dockerForTests();
await requireLocalImage(docker, IMAGE, 'installer/inference/build-inference-image.sh');
// A model that finds the test pictures' shapes, so that equal predictions are real boxes.
const fixture = await annotatingModel('detect');
const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  RATE_LIMIT_MUTATION: '1000',
  RATE_LIMIT_PREDICT: '1000',
});
const { server, alice } = world;
const dir = mkdtempSync(join(tmpdir(), 'vp-deployments-docker-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const pictures = (await writeTestPictures(dir)).map((written) => readFileSync(written.file));

await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, {
  project: 'vision',
  model: 'detector',
  task: 'detect',
  trainArgs: { imgsz: fixture.imgsz },
});
await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
await seedOnnxExport(server, model.id, fixture.onnx);

const { enrollmentToken } = await server.services().hosts.connect('docker-inference', undefined, 'us-central1');
const config = join(dir, 'agent.json');
await enrollAgent(t, server.url, enrollmentToken, config);
// The container's published port is reached on the loopback of this machine.
const agent = runAgent(t, config, {
  VP_WORKER_RUNTIME: 'docker',
  VP_WORKER_WORK_DIR: join(dir, 'work'),
  VP_WORKER_INFERENCE_IMAGE: IMAGE,
  VP_WORKER_SERVICE_HOST: '127.0.0.1',
});

const read = async () =>
  (
    await call<{ deployment: { id: string; status: string; statusMessage?: string } }>(
      server,
      'GET',
      '/api/deployments/alice/boxed',
      { key: alice },
    )
  ).body.deployment;
const containersOf = async (jobId: string) =>
  (await docker.listContainers({ all: true })).filter((container) =>
    Object.values(container.Labels ?? {}).includes(jobId),
  );

t.test(
  'create → ready in a container with its limits; predictions equal the platform’s; stop removes it',
  async (t) => {
    const body = {
      project: 'vision',
      model: 'detector',
      deployment: 'boxed',
      name: 'boxed',
      region: 'us-central1',
      cpu: 2,
      memoryGi: 4,
    };
    const created = await eventually(
      async () => {
        const answer = await call<{ id: string; apiKey: string }>(server, 'POST', '/api/deployments/alice', {
          key: alice,
          body,
        });
        return answer.status === 201 && answer.body;
      },
      `a host that runs inference servers: ${agent.output().slice(-2000)}`,
      60_000,
    );
    await eventually(
      async () => {
        const deployment = await read();
        if (deployment.status === 'failed')
          throw new Error(`failed: ${deployment.statusMessage}\n${agent.output().slice(-3000)}`);
        return deployment.status === 'ready';
      },
      'the deployment ready',
      180_000,
    );

    const [revision] = await query<{ job_id: string }>(
      server.orm.em.fork() as EntityManager,
      `select job_id from deployment_revisions where deployment_id = ? and state = 'live'`,
      [created.id],
    );
    const [container] = await containersOf(revision!.job_id);
    t.ok(container, 'its server runs in a container');
    const limits = (await docker.getContainer(container!.Id).inspect()).HostConfig;
    t.match(
      limits,
      { NanoCpus: 2e9, Memory: 4 * 2 ** 30 },
      "the deployment's CPU and memory are the container's limits",
    );

    let detections = 0;
    for (const image of pictures) {
      const expected = await predictAt(
        `${server.url}/api/models/alice/vision/detector`,
        image,
        { conf: '0.01' },
        alice,
      );
      t.equal(expected.status, 200);
      detections += expected.body.images?.[0]?.results.length ?? 0;
      for (const [via, url, key] of [
        ['the service URL', `${server.url}/svc/${created.id}`, created.apiKey],
        ['the platform', `${server.url}/api/deployments/alice/boxed`, alice],
      ] as const) {
        const answer = await predictAt(url, image, { conf: '0.01' }, key);
        t.equal(answer.status, 200, `${via}: ${JSON.stringify(answer.body).slice(0, 300)}`);
        t.same(
          answer.body.images?.[0]?.results,
          expected.body.images?.[0]?.results,
          `${via}: the control plane's predictions`,
        );
      }
    }
    t.ok(detections > 0, `the pictures have detections (${detections})`);

    t.equal(
      (await call(server, 'PATCH', '/api/deployments/alice/boxed', { key: alice, body: { action: 'stop' } })).status,
      202,
    );
    await eventually(async () => (await read()).status === 'stopped', 'the deployment stopped', 60_000);
    await eventually(async () => (await containersOf(revision!.job_id)).length === 0, 'the container removed', 30_000);
  },
);
