// Real trainings (the ultralytics trainer from .venv-trainer, on CPU) on a real agent (process runtime) that meet
// trouble: a trainer that fails shows its user why (its last error line, without host paths), and an agent stopped
// with SIGTERM mid-training leaves the trainer running; restarted, it reports the training completed, run once.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

// The host is not given up for lost while its agent is down in these tests (that is the scheduler's business).
const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  RATE_LIMIT_TRAINING: '1000',
  HOST_LOST_GRACE_SECONDS: '600',
});
const { server, alice } = world;
await server.services().billing.grant('alice', 100_000, 'CI credit');
await createShapesDataset(t, world, alice, 'alice', 'shapes');
if (
  (await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'lifecycle', name: 'Lifecycle' } }))
    .status !== 201
)
  throw new Error('project not created');

const dir = mkdtempSync(join(tmpdir(), 'vp-train-lifecycle-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const config = join(dir, 'agent.json');
const workRoot = join(dir, 'work');
const { enrollmentToken } = await server.services().hosts.connect('lifecycle-host');
await enrollAgent(t, server.url, enrollmentToken, config);
const startAgent = () =>
  runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: workRoot, VP_WORKER_PROCESS_VENV: VENV });
let agent = startAgent();
await eventually(
  async () =>
    (await call<Record<string, string | null>>(server, 'GET', '/api/training/gpu-availability')).body.cpu === 'High',
  'the host to connect',
);

interface Training {
  job: {
    id: string;
    status: string;
    progress: { currentEpoch: number; totalEpochs: number };
    history: Array<{ epoch: number }>;
    error: { message: string; timestamp: string } | null;
    compute: { host: string | null; jobStatus: string; attempts: number } | null;
  } | null;
}
const training = async (model: string) =>
  (await call<Training>(server, 'GET', `/api/models/alice/lifecycle/${model}/training`, { key: alice })).body.job;
const start = async (model: string, trainArgs: Record<string, unknown>) => {
  const modelId = (
    await call<{ id: string }>(server, 'POST', '/api/models', { key: alice, body: { project: 'lifecycle', model } })
  ).body.id;
  const started = await call<{ jobId: string }>(server, 'POST', '/api/training/start', {
    key: alice,
    body: { modelId, trainArgs, gpuType: 'cpu' },
  });
  if (started.status !== 200)
    throw new Error(`training not started: ${started.status} ${JSON.stringify(started.body)}`);
  return started.body.jobId;
};
const ended = (model: string, what: string, timeoutMs = 240_000) =>
  eventually(
    async () => {
      const job = await training(model);
      return job && ['completed', 'failed', 'cancelled'].includes(job.status) ? job : undefined;
    },
    `${what}; agent log:\n${agent.output().slice(-4000)}`,
    timeoutMs,
  );
const trainArgs = (epochs: number, model = 'yolo11n.yaml') => ({
  model,
  data: 'ul://alice/datasets/shapes',
  epochs,
  imgsz: 160,
  batch: 16,
  workers: 0,
  plots: false,
});

t.test("a trainer that fails: the training shows the trainer's own error line, without host paths", async (t) => {
  const jobId = await start('no-such-yaml', trainArgs(1, 'yolo99z.yaml'));
  const job = await ended('no-such-yaml', 'the training to fail');
  t.equal(job.status, 'failed');
  const error = job.error!.message;
  t.comment(`the error shown: ${error}`);
  t.match(
    error,
    /^exited with status 1: FileNotFoundError: .*yolo99z\.yaml.* does not exist/,
    'the cause, not only the exit status',
  );
  t.notMatch(error, /(^|[\s'"(=])\/\w/, 'no absolute path');
  t.notMatch(error, dir, 'nothing of the host');
  t.match(job.error, { timestamp: /^\d{4}-/ });
  const read = await call<{ job: { error: string } }>(server, 'GET', `/api/jobs/${jobId}`, { key: alice });
  t.equal(read.body.job.error, error, 'the job says the same');
});

t.test(
  'SIGTERM to the agent mid-training: the trainer goes on; the restarted agent reports it completed, run once',
  async (t) => {
    // Enough epochs that the trainer is still running once the agent has stopped (the first one alone takes seconds).
    const jobId = await start('outlives-agent', trainArgs(8));
    await eventually(
      async () => ((await training('outlives-agent'))?.progress.currentEpoch ?? 0) >= 1,
      `the first epoch; agent log:\n${agent.output().slice(-3000)}`,
      240_000,
    );
    const state = join(workRoot, '.vp-jobs', 'process', jobId);
    const { pid } = JSON.parse(readFileSync(join(state, 'job.json'), 'utf8')) as { pid: number };

    agent.child.kill('SIGTERM');
    t.equal(await agent.exited, 0, 'the agent stops cleanly');
    t.doesNotThrow(() => process.kill(pid, 0), 'the trainer runs on without its agent');
    await eventually(
      async () => existsSync(join(state, 'exit.json')),
      'the trainer to finish while no agent runs',
      300_000,
    );
    const exitedAt = statSync(join(state, 'exit.json')).mtimeMs;
    t.equal(
      (await training('outlives-agent'))?.compute?.jobStatus,
      'running',
      'the job waits for its agent to say how it ended',
    );
    // The agent comes back a while after the trainer ended: that while is not the trainer's.
    await new Promise((resolve) => setTimeout(resolve, 5000));

    agent = startAgent();
    const job = await ended('outlives-agent', 'the training to end');
    await eventually(
      async () => (await training('outlives-agent'))?.compute?.jobStatus === 'completed' && true,
      `the job to be reported; agent log:\n${agent.output().slice(-3000)}`,
    );
    t.match(await training('outlives-agent'), {
      status: 'completed',
      progress: { currentEpoch: 8, totalEpochs: 8 },
      compute: { host: 'lifecycle-host', attempts: 1, jobStatus: 'completed' },
    });
    t.same(
      job.history.map((row) => row.epoch),
      [0, 1, 2, 3, 4, 5, 6, 7],
      'every epoch once',
    );
    const db = server.services().em.getConnection();
    const [{ runs }] = (await db.execute('select count(*)::int as runs from training_runs where job_id = ?', [
      jobId,
    ])) as Array<{ runs: number }>;
    t.equal(runs, 1, 'one training run');
    const [charged] = (await db.execute(
      `select j.run_seconds, extract(epoch from j.started_at) * 1000 as started, extract(epoch from j.finished_at) * 1000 as finished, (c.metadata->>'seconds')::float as seconds
     from jobs j join credit_transactions c on c.job_id = j.id and c.kind = 'charge' where j.id = ?`,
      [jobId],
    )) as Array<{ run_seconds: number; started: number; finished: number; seconds: number }>;
    const ran = (exitedAt - Number(charged!.started)) / 1000;
    t.ok(
      charged!.run_seconds <= ran + 1 && charged!.run_seconds >= ran - 5,
      `counted ${charged!.run_seconds} s: the trainer's run (${ran} s since its assignment), not until its agent came back`,
    );
    t.equal(charged!.seconds, Math.ceil(charged!.run_seconds), 'charged for that');
    t.ok(Math.abs(Number(charged!.finished) - exitedAt) < 1500, 'the job ended when the trainer exited');
    const model = await call<{ model: { status: string; weights: unknown } }>(
      server,
      'GET',
      '/api/models/alice/lifecycle/outlives-agent',
      { key: alice },
    );
    t.match(model.body.model, { status: 'completed', weights: { size: Number } });
  },
);
