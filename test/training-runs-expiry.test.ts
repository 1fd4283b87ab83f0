// Runs on a user's own machine that stop without a word (killed, Ctrl-C, machine gone) do not stay "training":
// the real `yolo train` from .venv-trainer reports to a real control plane, is killed, and the run ends failed
// after TRAINING_RUN_SILENCE_SECONDS; cancelling a run nobody listens to ends it cancelled; a trainer that was
// only slow still completes its run with its final report; runs of cloud jobs are left to their job.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { eventually, queueCommand } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

// Silent a minute: failed (a live trainer posts its console within 5 s of every batch; the margin is for a busy
// 2-core machine). Asked to cancel and silent 3 s: cancelled.
const SILENCE_SECONDS = 60;
const SILENCE_REASON = 'No report from the trainer for 1 minute; its machine may have stopped';
const limits = { TRAINING_CANCEL_GRACE_SECONDS: '3', RATE_LIMIT_METRICS: '100000' };
const world = await startWorld(t, { ...limits, TRAINING_RUN_SILENCE_SECONDS: String(SILENCE_SECONDS) });
const { server, alice } = world;
await createShapesDataset(t, world, alice, 'alice', 'shapes', { train: 16, val: 8 });
const db = server.services().em.getConnection();

interface Training {
  job: {
    status: string;
    runId: number | null;
    error: { message: string } | null;
    progress: { currentEpoch: number; totalEpochs: number; completedAt?: string };
  } | null;
}
interface ModelRead {
  model: {
    id: string;
    status: string;
    trainingError?: { message: string };
    metrics: Record<string, number> | null;
    weights: { size: number } | null;
  };
}
const training = async (path: string) =>
  (await call<Training>(server, 'GET', `/api/models/alice/${path}/training`, { key: alice })).body.job;
const model = async (path: string) =>
  (await call<ModelRead>(server, 'GET', `/api/models/alice/${path}`, { key: alice })).body.model;
const cancel = (path: string) =>
  call<Record<string, unknown>>(server, 'DELETE', `/api/models/alice/${path}/training`, { key: alice });
/** A scripted trainer's event (to `replica`: any control plane on the database). */
const metrics = (body: Record<string, unknown>, replica: { url: string } = server) =>
  call<{ modelId: string; runId: number; cancelled: boolean }>(replica, 'POST', '/api/webhooks/training/metrics', {
    key: alice,
    body,
  });
const runStatus = async (id: number) =>
  ((await db.execute(`select status from training_runs where id = ?`, [id]))[0] as { status: string } | undefined)
    ?.status;
const ended = (path: string, timeoutMs: number) =>
  eventually(
    async () => {
      const job = await training(path);
      return job?.status !== 'running' ? (job ?? undefined) : undefined;
    },
    `the training of ${path} to end`,
    timeoutMs,
  );

// One machine of the user's: its own ultralytics settings, runs and datasets in its working directory; offline.
const work = mkdtempSync(join(tmpdir(), 'vp-byoc-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const env = {
  ...process.env,
  ULTRALYTICS_PLATFORM_URL: server.url,
  ULTRALYTICS_API_KEY: alice,
  YOLO_OFFLINE: '1',
  YOLO_CONFIG_DIR: join(work, 'config'),
};

interface Trainer {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}
/** `yolo …` in its own process group, as a terminal runs it (Ctrl-C reaches the whole group). */
function yolo(args: string[]): Trainer {
  const child = spawn(join(VENV, 'bin/yolo'), args, {
    cwd: work,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  child.stderr!.on('data', (chunk) => (out += chunk));
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  });
  return { child, output: () => out, exited };
}
const train = (name: string, epochs: number) =>
  yolo([
    'train',
    'model=yolo11n.yaml',
    'data=ul://alice/datasets/shapes',
    `epochs=${epochs}`,
    'imgsz=32',
    'batch=8',
    'workers=0',
    'plots=False',
    'device=cpu',
    'project=alice/own',
    `name=${name}`,
  ]);

/** The run's last.pt, written at every epoch end (before the epoch is reported). */
function lastCheckpoint(name: string): string | undefined {
  const find = (dir: string): string | undefined => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        const found =
          entry.name === name && existsSync(join(path, 'weights/last.pt')) ? join(path, 'weights/last.pt') : find(path);
        if (found) return found;
      }
    }
    return undefined;
  };
  return existsSync(join(work, 'runs')) ? find(join(work, 'runs')) : undefined;
}

/** Starts a long run and waits for its first reported epoch; answers its run id. */
async function trainingUntilFirstEpoch(trainer: Trainer, name: string): Promise<number> {
  const job = await eventually(
    async () => {
      if (trainer.child.exitCode !== null) throw new Error(`yolo exited early:\n${trainer.output().slice(-3000)}`);
      const job = await training(`own/${name}`).catch(() => null);
      return job && job.progress.currentEpoch >= 1 ? job : undefined;
    },
    `the first epoch of ${name}`,
    240_000,
  );
  return job.runId!;
}

t.before(async () => {
  const settings = yolo([
    'settings',
    `runs_dir=${join(work, 'runs')}`,
    `datasets_dir=${join(work, 'datasets')}`,
    `weights_dir=${join(work, 'weights')}`,
  ]);
  if ((await settings.exited) !== 0) throw new Error(settings.output());
});

t.test('a run whose machine dies (the trainer killed outright) fails after the silence, with the reason', async (t) => {
  const trainer = train('killed', 500);
  const runId = await trainingUntilFirstEpoch(trainer, 'killed');
  t.equal(await runStatus(runId), 'running', 'reporting: running');
  const [{ gap }] = (await db.execute(
    `select coalesce(max(extract(epoch from at - previous)), 0)::float as gap from (
       select at, lag(at) over (order by at) as previous from (select at from training_console where run_id = ? union all select at from training_epochs where run_id = ?) reports) gaps`,
    [runId, runId],
  )) as Array<{ gap: number }>;
  t.comment(`the longest gap between the live trainer's reports: ${gap.toFixed(1)} s`);
  const killedAt = Date.now();
  process.kill(-trainer.child.pid!, 'SIGKILL');
  await trainer.exited;

  const job = await ended('own/killed', (SILENCE_SECONDS + 60) * 1000);
  t.equal(job.status, 'failed');
  t.equal(job.error?.message, SILENCE_REASON);
  const silentFor = (Date.parse(job.progress.completedAt!) - killedAt) / 1000;
  t.ok(silentFor >= SILENCE_SECONDS - 1, `ended only after the silence (${silentFor.toFixed(1)} s after the kill)`);
  t.match(await model('own/killed'), { status: 'failed', trainingError: { message: SILENCE_REASON } });
  t.equal((await cancel('own/killed')).status, 409, 'nothing left to cancel');
});

t.test(
  'Ctrl-C: the client sends no end; the run fails after the silence, and `yolo train resume` trains the model on to completion',
  async (t) => {
    const trainer = train('interrupted', 4);
    await eventually(
      async () => {
        if (trainer.child.exitCode !== null) throw new Error(`yolo exited early:\n${trainer.output().slice(-3000)}`);
        return lastCheckpoint('interrupted');
      },
      "the first epoch's last.pt",
      240_000,
    );
    process.kill(-trainer.child.pid!, 'SIGINT');
    t.not(await trainer.exited, 0, 'yolo stopped by the interrupt');
    t.match(trainer.output(), /KeyboardInterrupt/);
    const runId = (await training('own/interrupted'))!.runId!;
    t.equal(
      await runStatus(runId),
      'running',
      'the client reports nothing on KeyboardInterrupt (no training_failed): only silence tells',
    );

    const job = await ended('own/interrupted', (SILENCE_SECONDS + 60) * 1000);
    t.match(job, { status: 'failed', error: { message: SILENCE_REASON } });
    t.equal((await model('own/interrupted')).status, 'failed');

    // The user picks it up again: the trainer finds the model in its save dir and reports to it as a new run.
    const resumed = yolo(['train', 'resume', `model=${lastCheckpoint('interrupted')}`]);
    const code = await resumed.exited;
    if (code !== 0) t.comment(resumed.output().slice(-3000));
    t.equal(code, 0, 'the resumed run finished');
    const after = (await training('own/interrupted'))!;
    t.match(after, { status: 'completed', progress: { currentEpoch: 4, totalEpochs: 4 } });
    t.not(after.runId, runId, 'as a run of its own');
    t.match(await model('own/interrupted'), { status: 'completed', trainingError: null, weights: { size: Number } });
    t.equal(await runStatus(runId), 'failed', 'the interrupted run stays failed');
  },
);

t.test(
  'cancelling a run whose trainer is gone ends it cancelled at once; the model trains again afterwards',
  async (t) => {
    const trainer = train('abandoned', 500);
    const runId = await trainingUntilFirstEpoch(trainer, 'abandoned');
    const killedAt = Date.now();
    process.kill(-trainer.child.pid!, 'SIGKILL');
    await trainer.exited;
    // Past the cancel grace (3 s) without a report, well before the silence limit.
    await eventually(async () => Date.now() - killedAt > 4000, 'the run to be silent 4 s', 10_000);

    t.same((await cancel('own/abandoned')).body, { success: true, status: 'cancelled' });
    t.match(await training('own/abandoned'), { status: 'cancelled', error: null });
    t.match(await model('own/abandoned'), { status: 'cancelled', trainingError: null });
    t.equal((await cancel('own/abandoned')).status, 409, 'no longer active');

    const again = yolo(['train', 'resume', `model=${lastCheckpoint('abandoned')}`]);
    const started = await eventually(
      async () => {
        const job = await training('own/abandoned');
        return job && job.runId !== runId ? job : undefined;
      },
      'the model to train again',
      120_000,
    );
    t.equal(started.status, 'running', 'the model trains again');
    t.equal((await model('own/abandoned')).status, 'running');
    process.kill(-again.child.pid!, 'SIGKILL');
    await again.exited;
  },
);

t.test('a cancel the trainer does not answer: the run ends cancelled after the cancel grace', async (t) => {
  const started = await metrics({
    event: 'training_started',
    project: 'alice/scripted',
    name: 'deaf',
    data: { epochs: 10 },
  });
  t.match(
    (await cancel('scripted/deaf')).body,
    { success: true, status: 'cancelled', warning: String },
    'it reported just now: it may still hear the cancel',
  );
  t.match(
    (
      await metrics({
        event: 'console_output',
        modelId: started.body.modelId,
        data: { chunkId: 1, content: 'x', lineCount: 1 },
      })
    ).body,
    { cancelled: true },
  );
  const job = await ended('scripted/deaf', 30_000);
  t.match(job, { status: 'cancelled', error: null });
  t.equal((await model('scripted/deaf')).status, 'cancelled');
  // The trainer was alive after all: it stops and sends its partial results, which land on the cancelled model.
  t.match(
    (
      await metrics({
        event: 'training_complete',
        modelId: started.body.modelId,
        data: { runId: started.body.runId, results: { metrics: { 'metrics/mAP50(B)': 0.25 } } },
      })
    ).body,
    { cancelled: true },
  );
  t.match(await model('scripted/deaf'), { status: 'cancelled', metrics: { mAP50: 0.25 } });
  t.equal((await training('scripted/deaf'))!.status, 'cancelled');
});

// A second replica on the same database that takes 2 s of silence for death, started once no real trainer runs:
// scripted trainers need not wait a minute, and both replicas sweep the same runs.
t.test('on a replica taking 2 s of silence for death', async (t) => {
  const quick = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { ...limits, TRAINING_RUN_SILENCE_SECONDS: '2' },
  });
  const report = (body: Record<string, unknown>) => metrics(body, quick);

  t.test(
    'a trainer that was only slow: its late reports do not revive the run, its training_complete completes it',
    async (t) => {
      const started = await report({
        event: 'training_started',
        project: 'alice/scripted',
        name: 'slow',
        data: { epochs: 2 },
      });
      const quiet = await report({
        event: 'training_started',
        project: 'alice/scripted',
        name: 'quiet',
        data: { epochs: 2 },
      });
      const expired = await ended('scripted/slow', 30_000);
      t.match(expired, {
        status: 'failed',
        error: { message: 'No report from the trainer for 2 seconds; its machine may have stopped' },
      });
      await ended('scripted/quiet', 30_000);

      const epoch = await report({
        event: 'epoch_end',
        modelId: started.body.modelId,
        data: { runId: started.body.runId, epoch: 0, metrics: {} },
      });
      t.match(epoch.body, { received: true, cancelled: false }, 'not told to stop: it may still finish');
      t.equal((await training('scripted/slow'))!.status, 'failed', 'an epoch does not revive it');
      t.equal(
        (
          await report({
            event: 'training_failed',
            modelId: quiet.body.modelId,
            data: { runId: quiet.body.runId, error: 'late' },
          })
        ).status,
        200,
      );
      t.match(
        await training('scripted/quiet'),
        { status: 'failed', error: { message: /^No report from the trainer/ } },
        'a run ended keeps its end',
      );

      const complete = await report({
        event: 'training_complete',
        modelId: started.body.modelId,
        data: { runId: started.body.runId, results: { metrics: { 'metrics/mAP50(B)': 0.5 }, bestEpoch: 1 } },
      });
      t.match(complete.body, { received: true, cancelled: false });
      t.match(await training('scripted/slow'), { status: 'completed', error: null });
      t.match(await model('scripted/slow'), { status: 'completed', trainingError: null, metrics: { mAP50: 0.5 } });
    },
  );

  t.test("runs of a training job are the job's business: never expired by the sweep", async (t) => {
    const byJob = await report({
      event: 'training_started',
      project: 'alice/scripted',
      name: 'on-a-host',
      data: { epochs: 2 },
    });
    await report({
      event: 'training_started',
      project: 'alice/scripted',
      name: 'beside-it',
      data: { epochs: 2 },
    });
    // A job no host can take (8 H200s): its run stays as the job left it.
    const jobId = await queueCommand(server, 'alice', { command: ['true'] }, { gpuType: 'h200-sxm', gpuCount: 8 });
    await db.execute(`update training_runs set job_id = ? where id = ?`, [jobId, byJob.body.runId]);
    await ended('scripted/beside-it', 30_000);
    t.equal(
      await runStatus(byJob.body.runId),
      'running',
      'the job run was left alone by the sweep that ended its neighbour',
    );
  });
});
