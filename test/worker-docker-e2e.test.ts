// A real vp-worker agent on the Docker runtime (a real engine, a locally built image): a job runs in a
// container with its logs streamed; cancel stops the container; the agent stopped (SIGTERM) mid-job is restarted
// and adopts the still-running container, so the job finishes once and is recorded; a job's outputs written in its
// container are uploaded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { jobOutputs } from '../control-plane/src/jobs/job-output.store.ts';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { dockerForTests } from './helpers/docker.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';

const { docker, image } = await dockerForTests();
const server = await startTestServer(t, {
  env: { RATE_LIMIT_DEFAULT: '100000', WORKER_HEARTBEAT_SECONDS: '1', HOST_LOST_GRACE_SECONDS: '30' },
});
await server.services().account.createUser('dora');
await server.services().account.createTeam('docker-team', 'dora');
const key = (await server.services().apiKeys.create('docker-team', 'ci')).key;
const dir = mkdtempSync(join(tmpdir(), 'vp-docker-agent-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'config.json');
const { enrollmentToken } = await server.services().hosts.connect('docker-host', 'docker-team');
await enrollAgent(t, server.url, enrollmentToken, config);
const startAgent = () =>
  runAgent(t, config, {
    VP_WORKER_RUNTIME: 'docker',
    VP_WORKER_WORK_DIR: join(dir, 'work'),
    VP_WORKER_TRAINER_IMAGE: image,
  });

const containersOf = async (jobId: string) =>
  docker.listContainers({ all: true, filters: { label: [`vp.job-id=${jobId}`] } });
const lines = async (jobId: string) =>
  (await call<{ lines: Array<{ line: string }> }>(server, 'GET', `/api/jobs/${jobId}/logs`, { key })).body.lines.map(
    (line) => line.line,
  );
const shell = (workDir: string, script: string) => ({ command: ['sh', '-c', script], workDir });

t.test(
  'a job runs in a container of the trainer image; cancel stops it; the agent stopped mid-job adopts it after a restart',
  async (t) => {
    let agent = startAgent();
    const quick = await queueCommand(server, 'docker-team', shell('jobs/quick', 'echo "in $(pwd)"; echo oops >&2'));
    await eventually(
      async () => (await readJob(server, quick)).status === 'completed',
      `the job to complete; agent log:\n${agent.output()}`,
      60_000,
    );
    t.same(
      await lines(quick),
      [`in ${join(dir, 'work', 'jobs/quick')}`, 'oops'],
      'stdout and stderr, the work dir mounted at its host path',
    );
    await eventually(
      async () => (await containersOf(quick)).length === 0 && true,
      'its container to be removed once its end is reported',
    );

    const endless = await queueCommand(
      server,
      'docker-team',
      shell('jobs/endless', 'while true; do echo tick; sleep 0.2; done'),
    );
    await eventually(async () => (await readJob(server, endless)).logLines > 2, 'output');
    t.equal((await containersOf(endless)).length, 1, 'one container runs it');
    t.equal((await call(server, 'DELETE', `/api/jobs/${endless}`, { key })).status, 200);
    await eventually(async () => (await readJob(server, endless)).status === 'cancelled', 'cancelled', 30_000);
    await eventually(async () => (await containersOf(endless)).length === 0 && true, 'the container to be removed');

    const survivor = await queueCommand(
      server,
      'docker-team',
      shell('jobs/survivor', 'echo start; sleep 4; echo done'),
    );
    await eventually(async () => (await lines(survivor)).includes('start'), 'the job to start', 30_000);
    agent.child.kill('SIGTERM');
    t.equal(await agent.exited, 0, 'the agent stops cleanly, leaving its job');
    t.equal((await containersOf(survivor))[0]?.State, 'running', 'the container outlives its agent');
    agent = startAgent();
    await eventually(
      async () => (await readJob(server, survivor)).status !== 'running' && true,
      `the job to end; agent log:\n${agent.output()}`,
      60_000,
    );
    t.match(await readJob(server, survivor), { status: 'completed', attempts: 1 });
    t.same(await lines(survivor), ['start', 'done'], 'ran once; output after the restart arrived too');
    await eventually(async () => (await containersOf(survivor)).length === 0 && true, 'its container to be removed');
  },
);

t.test(
  'a job in a container leaves outputs: a file and its work dir zipped, uploaded before it is completed',
  async (t) => {
    const agent = startAgent();
    const jobId = await queueCommand(server, 'docker-team', {
      ...shell('jobs/export', 'echo model > best.onnx; echo "<net/>" > best.xml'),
      outputs: [
        { path: 'best.onnx', name: 'best.onnx' },
        { path: '.', name: 'export.zip' },
      ],
    });
    await eventually(
      async () =>
        (await readJob(server, jobId)).status !== 'running' && (await readJob(server, jobId)).status !== 'queued',
      `the job to end; agent log:\n${agent.output()}`,
      60_000,
    );
    t.match(await readJob(server, jobId), { status: 'completed', error: null });
    const outputs = await jobOutputs(server.orm.em.fork() as EntityManager, jobId);
    t.same(
      outputs.map((output) => output.name),
      ['best.onnx', 'export.zip'],
    );
    const read = async (storageKey: string) => {
      const chunks: Buffer[] = [];
      for await (const chunk of (await server.storage.store.get(storageKey))!.stream) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks);
    };
    t.equal((await read(outputs[0].storageKey)).toString(), 'model\n');
    const zip = await read(outputs[1].storageKey);
    t.equal(zip.subarray(0, 4).toString('hex'), '504b0304', 'a zip archive');
    t.ok(zip.includes('best.xml') && zip.includes('best.onnx'), 'of the files the container wrote');
    t.match(await lines(jobId), [
      /^uploading best\.onnx \(6 B\)$/,
      'uploaded best.onnx',
      /^uploading export\.zip/,
      'uploaded export.zip',
    ]);
  },
);
