// Service jobs (deployments) on a real worker agent's job manager and both runtimes, with no control plane: the
// inference server runs on a model trained by the suite, fetched as the job's input; the agent reports job.service once
// it is healthy, with a URL that answers predict, and again after a reconnect or an agent restart; a cancel stops the
// server; a server that exits, or does not answer its health check in time, fails the job. Docker: the locally built vp-inference image.
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { AgentMessage, JobSpec } from '@vp/protocol';
import { INFERENCE_SERVER, SERVICE_PORT } from '../inference-server/src/contract.ts';
import { JobManager } from '../worker-agent/src/job-manager.ts';
import { DockerRuntime } from '../worker-agent/src/runtimes/docker-runtime.ts';
import { ProcessRuntime } from '../worker-agent/src/runtimes/process-runtime.ts';
import type { JobRuntime } from '../worker-agent/src/runtimes/runtime.ts';
import { DOCKER_SOCKET, dockerForTests, requireLocalImage } from './helpers/docker.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { predictAt, SERVICE_TOKEN } from './helpers/inference-server.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';

t.setTimeout(20 * 60_000);
const IMAGE = 'vp-inference:latest';

// The annotation fixture: trained long enough for boxes of real confidence.
const fixture = await annotatingModel('detect');
const dir = mkdtempSync(join(tmpdir(), 'vp-service-jobs-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const [picture] = await writeTestPictures(dir);
const bytes = readFileSync(picture!.file);

// The model as a deployment gets it: an input the agent downloads into the job's work dir.
const files = createServer((_req, res) => createReadStream(fixture.onnx).pipe(res));
await new Promise<void>((listening) => files.listen(0, '127.0.0.1', listening));
t.teardown(() => files.close());
const modelUrl = `http://127.0.0.1:${(files.address() as { port: number }).port}/model.onnx`;

/** What a control plane sends for a deployment (see the report of this branch). */
function deployment(name: string, env: Record<string, string> = {}): JobSpec {
  return {
    command: [INFERENCE_SERVER],
    env: {
      VP_MODEL_FILE: 'model.onnx',
      VP_SERVICE_TOKEN: SERVICE_TOKEN,
      VP_MAX_BYTES: String(10 * 2 ** 20),
      VP_INTRA_OP_THREADS: '1',
      VP_MODEL_NAME: 'alice/shapes/detector',
      ...env,
    },
    workDir: `deployments/${name}`,
    gpus: { count: 0 },
    cpus: 1,
    memoryBytes: 2 * 2 ** 30,
    environment: 'inference',
    service: { port: SERVICE_PORT, healthPath: '/health', startSeconds: 60 },
    inputs: [{ url: modelUrl, path: 'model.onnx' }],
  };
}

/** A job manager on `runtime` whose messages are kept, as the control plane would receive them. */
function agent(runtime: JobRuntime, workRoot: string) {
  const messages: AgentMessage[] = [];
  const jobs = new JobManager(
    runtime,
    () => {},
    (message) => messages.push(message) > 0,
    {
      files: { server: 'http://127.0.0.1:9', workerKey: 'unused', workRoot, log: () => {} },
      serviceHost: () => '127.0.0.1',
    },
  );
  const of = <T extends AgentMessage['type']>(type: T, jobId: string) =>
    messages.filter(
      (message): message is Extract<AgentMessage, { type: T }> =>
        message.type === type && 'jobId' in message && message.jobId === jobId,
    );
  const finished = (jobId: string) =>
    eventually(async () => of('job.finished', jobId)[0], `job ${jobId} to finish`, 60_000);
  const service = (jobId: string, count = 1) =>
    eventually(async () => of('job.service', jobId)[count - 1], `job.service #${count} of ${jobId}`, 90_000);
  return { jobs, messages, of, finished, service };
}

const answers = (url: string) =>
  fetch(`${url}/health`).then(
    (response) => response.status === 200,
    () => false,
  );

async function runsAService(t: Test, runtime: JobRuntime, workRoot: string, jobId: string) {
  const host = agent(runtime, workRoot);
  await host.jobs.assign({ type: 'job.assign', jobId, attempt: 1, spec: deployment(jobId) });
  const { url } = await host.service(jobId);
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const { status, body } = await predictAt(url, bytes, { conf: '0.01' });
  t.equal(status, 200, `predict at ${url}: ${JSON.stringify(body).slice(0, 300)}`);
  t.ok((body.images?.[0]?.results.length ?? 0) > 0, 'with detections');
  t.match(body.metadata, { model: 'alice/shapes/detector', task: 'detect' });

  host.jobs.connected();
  t.equal((await host.service(jobId, 2)).url, url, 'sent again after a reconnect');

  host.jobs.cancel({ type: 'job.cancel', jobId, reason: 'deployment stopped' });
  t.match(await host.finished(jobId), { outcome: 'cancelled', error: 'deployment stopped' });
  t.notOk(await answers(url), 'the server is stopped');
}

async function failsWhenTheServerExits(t: Test, runtime: JobRuntime, workRoot: string, jobId: string) {
  const host = agent(runtime, workRoot);
  await host.jobs.assign({
    type: 'job.assign',
    jobId,
    attempt: 1,
    spec: deployment(jobId, { VP_MODEL_FILE: 'missing.onnx' }),
  });
  const finished = await host.finished(jobId);
  t.match(finished, { outcome: 'failed', exitCode: 1 });
  t.match(finished.error, /the model could not be loaded/, 'its last log line says why');
  t.same(host.of('job.service', jobId), [], 'never announced');
}

t.test('process runtime', async (t) => {
  const workRoot = join(dir, 'process');
  const runtime = new ProcessRuntime({ workRoot, stopGraceMs: 5000 });
  t.same(await runtime.services(), ['inference']);
  await t.test('a deployment is served, announced, re-announced and stopped', (t) =>
    runsAService(t, runtime, workRoot, 'process-service'),
  );
  await t.test('a server that exits fails the job', (t) =>
    failsWhenTheServerExits(t, runtime, workRoot, 'process-exits'),
  );
  await t.test("a job that cannot start fails saying why, without this host's paths", async (t) => {
    // A file where the job's work dir must go (as a full disk, the error names the path it could not write).
    const blocked = join(dir, 'blocked');
    mkdirSync(blocked);
    writeFileSync(join(blocked, 'deployments'), 'not a folder');
    const host = agent(new ProcessRuntime({ workRoot: blocked, stopGraceMs: 5000 }), blocked);
    await host.jobs.assign({ type: 'job.assign', jobId: 'blocked', attempt: 1, spec: deployment('blocked') });
    const finished = await host.finished('blocked');
    t.match(finished, { outcome: 'failed', error: /^the job could not start: E[A-Z]+: / });
    t.notMatch(finished.error, dir, 'no path of this host');
  });

  await t.test('a service that does not answer its health check in time fails and is stopped', async (t) => {
    const host = agent(runtime, workRoot);
    // Predict without the token answers 401: never healthy.
    const spec = {
      ...deployment('process-unhealthy'),
      service: { port: SERVICE_PORT, healthPath: '/predict', startSeconds: 2 },
    };
    await host.jobs.assign({ type: 'job.assign', jobId: 'process-unhealthy', attempt: 1, spec });
    const finished = await host.finished('process-unhealthy');
    t.match(finished, {
      outcome: 'failed',
      error: /the service did not start: it did not answer \/predict with 200 within 2 s \(last: HTTP 401\)/,
    });
    t.same(host.of('job.service', 'process-unhealthy'), [], 'never announced');
  });

  await t.test('an agent restart adopts the service and announces it again', async (t) => {
    const first = agent(runtime, workRoot);
    await first.jobs.assign({
      type: 'job.assign',
      jobId: 'process-restart',
      attempt: 1,
      spec: deployment('process-restart'),
    });
    const { url } = await first.service('process-restart');
    first.jobs.detachAll();
    const second = agent(new ProcessRuntime({ workRoot, stopGraceMs: 5000 }), workRoot);
    await second.jobs.recover();
    second.jobs.connected();
    t.equal((await second.service('process-restart')).url, url, 'the same server, announced by the new agent');
    t.equal((await predictAt(url, bytes)).status, 200);
    second.jobs.cancel({ type: 'job.cancel', jobId: 'process-restart', reason: 'done' });
    t.match(await second.finished('process-restart'), { outcome: 'cancelled' });
  });
});

t.test('docker runtime, the vp-inference image', async (t) => {
  const { docker } = await dockerForTests();
  await requireLocalImage(docker, IMAGE, 'installer/inference/build-inference-image.sh');
  const workRoot = join(dir, 'docker');
  const runtime = new DockerRuntime({
    workRoot,
    host: 'service-jobs-test',
    socketPath: DOCKER_SOCKET,
    stopGraceMs: 5000,
  });
  t.same(await runtime.services(), ['inference']);
  t.same(
    await new DockerRuntime({
      workRoot,
      host: 'x',
      socketPath: DOCKER_SOCKET,
      inferenceImage: 'vp-inference:absent',
    }).services(),
    [],
    'no image, no service',
  );
  await t.test('a deployment is served from a container, announced and stopped', (t) =>
    runsAService(t, runtime, workRoot, 'docker-service'),
  );
  await t.test('a server that exits fails the job', (t) =>
    failsWhenTheServerExits(t, runtime, workRoot, 'docker-exits'),
  );
});
