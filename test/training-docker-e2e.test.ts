// Real training through the Docker runtime: a worker agent runs the job in a container of the locally built
// trainer image (vp/trainer:latest, installer/trainer/build-trainer-image.sh), and it completes with weights; a
// trainer that fails in its container shows its own error line. The container has a network of its own (never the
// host's), so the control plane listens on every interface and is reached at this machine's side of the jobs' bridge.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBE_RETRY, PROBE_TIMEOUT_MS } from '../worker-agent/src/exporter-probe.ts';
import { freePort } from '../worker-agent/src/runtimes/shared.ts';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { addressForContainers, dockerForTests, requireLocalImage } from './helpers/docker.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const IMAGE = 'vp/trainer:latest';
const { docker } = await dockerForTests();
await requireLocalImage(docker, IMAGE, 'installer/trainer/build-trainer-image.sh');

const port = String(await freePort());
const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  RATE_LIMIT_TRAINING: '1000',
  HOST: '0.0.0.0',
  PORT: port,
  PUBLIC_BASE_URL: `http://${await addressForContainers(docker)}:${port}`,
});
const { server, alice } = world;
await server.services().billing.grant('alice', 100_000, 'CI credit');
await createShapesDataset(t, world, alice, 'alice', 'shapes', { train: 32, val: 8 });
await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'boxed', name: 'Boxed' } });
const newModel = async (model: string) =>
  (await call<{ id: string }>(server, 'POST', '/api/models', { key: alice, body: { project: 'boxed', model } })).body
    .id;

const dir = mkdtempSync(join(tmpdir(), 'vp-train-docker-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'agent.json');
const { enrollmentToken } = await server.services().hosts.connect('docker-trainer');
await enrollAgent(t, server.url, enrollmentToken, config);
const agent = runAgent(t, config, {
  VP_WORKER_RUNTIME: 'docker',
  VP_WORKER_WORK_DIR: join(dir, 'work'),
  VP_WORKER_TRAINER_IMAGE: IMAGE,
});
await eventually(
  async () =>
    (await call<Record<string, string | null>>(server, 'GET', '/api/training/gpu-availability')).body.cpu === 'High',
  `the host to connect: ${agent.output()}`,
);

t.test('a training job runs in a trainer container and completes with weights', async (t) => {
  const modelId = await newModel('in-docker');
  const started = await call<{ jobId: string }>(server, 'POST', '/api/training/start', {
    key: alice,
    body: {
      modelId,
      gpuType: 'cpu',
      trainArgs: {
        model: 'yolo11n.yaml',
        data: 'ul://alice/datasets/shapes',
        epochs: 2,
        imgsz: 160,
        batch: 16,
        workers: 0,
        plots: false,
      },
    },
  });
  t.equal(started.status, 200, JSON.stringify(started.body));
  const ended = await eventually(
    async () => {
      const job = (
        await call<{ job: { status: string; progress: { currentEpoch: number } } | null }>(
          server,
          'GET',
          '/api/models/alice/boxed/in-docker/training',
          { key: alice },
        )
      ).body.job;
      return job !== null && ['completed', 'failed', 'cancelled'].includes(job.status) ? job : undefined;
    },
    `training to end; agent log:\n${agent.output().slice(-3000)}`,
    300_000,
  );
  if (ended.status !== 'completed') {
    const logs = await call<{ lines: Array<{ line: string }> }>(
      server,
      'GET',
      `/api/jobs/${started.body.jobId}/logs?limit=5000`,
      { key: alice },
    );
    t.comment(
      logs.body.lines
        .slice(-40)
        .map((line) => line.line)
        .join('\n'),
    );
  }
  t.match(ended, { status: 'completed', progress: { currentEpoch: 2 } });
  const files = await call<{ files: Array<{ size: number }> }>(
    server,
    'GET',
    '/api/models/alice/boxed/in-docker/files',
    { key: alice },
  );
  t.ok((files.body.files[0]?.size ?? 0) > 1_000_000, 'weights uploaded from the container');
  const containers = () =>
    docker.listContainers({ all: true, filters: { label: [`vp.job-id=${started.body.jobId}`] } });
  await eventually(async () => (await containers()).length === 0, 'the container to be removed');
  t.pass('the container is removed');
});

t.test(
  'the trained model exports in a trainer container: the host probed its image, the artifact is uploaded from the container',
  async (t) => {
    const exporters = async () =>
      (
        await server.services().em.getConnection().execute(`select exporters from hosts where name = 'docker-trainer'`)
      )[0]?.exporters as string[];
    await eventually(
      async () => (await exporters()).includes('openvino'),
      `the host to report its image's exporters: ${agent.output().slice(-2000)}`,
      // The probe ran beside the first test's training: a busy host's probe can outrun its bound and be tried again.
      PROBE_TIMEOUT_MS + PROBE_RETRY.firstMs + PROBE_TIMEOUT_MS,
    );
    const created = await call<{ id: string }>(server, 'POST', '/api/models/alice/boxed/in-docker/exports', {
      key: alice,
      body: { format: 'openvino', args: { imgsz: 160 } },
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    type View = {
      status: string;
      error?: { message: string };
      file?: { size: number; downloadUrl: string; downloadFilename: string };
    };
    const view = await eventually(
      async () => {
        const read = (
          await call<{ export: View }>(server, 'GET', `/api/models/alice/boxed/in-docker/exports/${created.body.id}`, {
            key: alice,
          })
        ).body.export;
        return ['completed', 'failed', 'cancelled'].includes(read.status) ? read : undefined;
      },
      `the export to end; agent log:\n${agent.output().slice(-3000)}`,
      300_000,
    );
    t.equal(view.status, 'completed', view.error?.message ?? '');
    t.match(view.file, { downloadFilename: 'in-docker_openvino_model.zip' });
    const zip = Buffer.from(await (await fetch(view.file!.downloadUrl)).arrayBuffer());
    t.equal(zip.length, view.file!.size);
    const names = zip.toString('latin1');
    t.ok(
      names.includes('in-docker.xml') && names.includes('in-docker.bin') && names.includes('metadata.yaml'),
      'the OpenVINO model directory, zipped',
    );
  },
);

t.test(
  "a trainer that fails in its container: the training shows the trainer's own error line, without paths",
  async (t) => {
    const modelId = await newModel('no-such-yaml');
    const started = await call(server, 'POST', '/api/training/start', {
      key: alice,
      body: {
        modelId,
        gpuType: 'cpu',
        trainArgs: { model: 'yolo99z.yaml', data: 'ul://alice/datasets/shapes', epochs: 1, imgsz: 160 },
      },
    });
    t.equal(started.status, 200, JSON.stringify(started.body));
    const job = await eventually(
      async () => {
        const read = (
          await call<{ job: { status: string; error: { message: string } | null } | null }>(
            server,
            'GET',
            '/api/models/alice/boxed/no-such-yaml/training',
            { key: alice },
          )
        ).body.job;
        return read !== null && ['completed', 'failed', 'cancelled'].includes(read.status) ? read : undefined;
      },
      `training to end; agent log:\n${agent.output().slice(-3000)}`,
      120_000,
    );
    t.equal(job.status, 'failed');
    t.match(job.error?.message, /^exited with status 1: FileNotFoundError: .*yolo99z\.yaml.* does not exist/);
    t.notMatch(job.error?.message, /(^|[\s'"(=])\/\w/, 'no absolute path');
  },
);
