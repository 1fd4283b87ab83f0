// The `ul cloud` workflows of the ultralytics-platform CLI (the trainer environment ships it) against an appliance
// with a real worker host running the real trainer: `ul cloud train` uploads a local checkpoint and a local dataset
// and, with `watch`, follows the epochs and saves the results; `ul cloud download` saves a finished model's. A failed
// or cancelled cloud job ends both with the job's message, never a crash.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { startTrainerHost } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call } from './helpers/server.ts';
import { shapesFiles } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/ul')))
  throw new Error(`no ul command at ${VENV}/bin: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  RATE_LIMIT_TRAINING: '1000',
  TRAINING_CANCEL_GRACE_SECONDS: '20',
});
const { server, alice } = world;
await server.services().billing.grant('alice', 100_000, 'CI credit');

const dir = mkdtempSync(join(tmpdir(), 'vp-ul-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const agent = await startTrainerHost(t, server, { name: 'cli-host', dir, venv: VENV });

// The user's machine: a working directory with their own ultralytics settings, offline apart from the appliance.
const work = join(dir, 'user');
mkdirSync(work);
const env = {
  ...process.env,
  ULTRALYTICS_PLATFORM_URL: server.url,
  ULTRALYTICS_API_KEY: alice,
  YOLO_CONFIG_DIR: join(work, 'config'),
  YOLO_OFFLINE: '1',
};

function run(command: string, args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(join(VENV, 'bin', command), args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.on('close', (code) => resolve({ code, out }));
  });
}
const ul = (...args: string[]) => run('ul', ['cloud', ...args]);
/** Small and fast on a CPU: what every cloud run here trains with. */
const SMALL = ['imgsz=32', 'batch=4', 'workers=0', 'plots=False', 'gpu_type=cpu'];
/** YOLO's save directory for `project=` and `name=` (a relative project is placed under runs_dir/<task>). */
const saved = (project: string, name: string, file: string) => join(work, 'runs/detect', project, name, file);
const read = (path: string) => readFileSync(path, 'utf8');

// A local dataset as a user has one: a YAML naming its splits, images and labels beside it.
for (const [path, content] of Object.entries(await shapesFiles(8, 4, 5))) {
  mkdirSync(dirname(join(work, 'my-shapes', path)), { recursive: true });
  writeFileSync(join(work, 'my-shapes', path), content);
}
writeFileSync(
  join(work, 'my-shapes/data.yaml'),
  'train: images/train\nval: images/val\nnames:\n  0: square\n  1: disc\n',
);
// Runs, datasets and weights in the working directory, not where ultralytics is installed.
const settings = await run('yolo', [
  'settings',
  `runs_dir=${join(work, 'runs')}`,
  `datasets_dir=${join(work, 'datasets')}`,
  `weights_dir=${join(work, 'weights')}`,
]);
if (settings.code !== 0) throw new Error(`yolo settings failed: ${settings.out}`);
// A local checkpoint: an untrained yolo11n saved as .pt (nothing is downloaded).
const checkpoint = await run('python', ['-c', "from ultralytics import YOLO; YOLO('yolo11n.yaml').save('local.pt')"]);
if (checkpoint.code !== 0) throw new Error(`could not save a checkpoint: ${checkpoint.out}`);

t.test(
  'ul cloud train … watch uploads a local checkpoint and dataset, shows the epochs and saves the results',
  async (t) => {
    const trained = await ul(
      'train',
      'model=local.pt',
      'data=my-shapes',
      'epochs=2',
      ...SMALL,
      'project=cli',
      'name=first',
      'watch',
    );
    t.equal(
      trained.code,
      0,
      `ul exited with 0; agent log:\n${agent.output().slice(-2000)}\n${trained.out.slice(-4000)}`,
    );
    t.match(trained.out, /Model: ul:\/\/alice\/cli\/local\n/, 'the checkpoint became a model of the project');
    t.match(trained.out, /Dataset: ul:\/\/alice\/datasets\/my-shapes /, 'the dataset was uploaded');
    t.match(trained.out, /Model: ul:\/\/alice\/cli\/first\n/);
    t.match(trained.out, /GPU: cpu at \$\d+\.\d\d\/h/);
    t.match(trained.out, /Training[^\n]*2\/2/, 'the epoch progress bar reached 2 of 2');
    t.notMatch(trained.out, /Traceback/);
    t.ok(existsSync(saved('cli', 'first', 'weights/best.pt')), 'the weights were saved');
    t.match(read(saved('cli', 'first', 'args.yaml')), /epochs: 2/, 'with the arguments it trained with');
    t.match(read(saved('cli', 'first', 'results.csv')), /epoch/, 'and its per-epoch results');
    t.match(JSON.parse(read(saved('cli', 'first', 'results.json'))), {
      status: 'completed',
      progress: { currentEpoch: 2, totalEpochs: 2 },
    });

    const model = (
      await call<{
        model: { status: string; hasWeights: boolean; trainResults: unknown[]; trainArgs: { model: string } };
      }>(server, 'GET', '/api/models/alice/cli/first', { key: alice })
    ).body.model;
    t.match(
      model,
      { status: 'completed', hasWeights: true, trainArgs: { model: 'ul://alice/cli/local' } },
      'fine-tuned from the uploaded checkpoint',
    );
    t.equal(model.trainResults.length, 2, 'both epochs are in its results');
  },
);

t.test('ul cloud download saves a trained model’s weights and results', async (t) => {
  const downloaded = await ul('download', 'model=ul://alice/cli/first', 'project=downloads', 'name=again');
  t.equal(downloaded.code, 0, downloaded.out.slice(-3000));
  t.ok(existsSync(saved('downloads', 'again', 'weights/best.pt')));
  t.match(JSON.parse(read(saved('downloads', 'again', 'results.json'))), { status: 'completed' });
});

t.test('a failed cloud job ends watch and download with its error, not a crash', async (t) => {
  // A user's typo the trainer rejects only once it runs.
  const watched = await ul(
    'train',
    'model=ul://alice/cli/first',
    'data=ul://alice/datasets/my-shapes',
    'epochs=1',
    ...SMALL,
    'optimizer=Nope',
    'project=cli',
    'name=broken',
    'watch',
  );
  t.equal(watched.code, 1, watched.out.slice(-3000));
  t.match(watched.out, /Error: Cloud job failed: .*Optimizer 'Nope' not found/);
  t.notMatch(watched.out, /Traceback|AttributeError/);
  const downloaded = await ul('download', 'model=ul://alice/cli/broken');
  t.equal(downloaded.code, 1);
  t.match(downloaded.out, /Error: Cloud job failed: .*Optimizer 'Nope' not found/);
  t.notMatch(downloaded.out, /Traceback|AttributeError/);
});

t.test('a cancelled cloud job ends watch and download with its status, not a crash', async (t) => {
  const watching = ul(
    'train',
    'model=ul://alice/cli/first',
    'data=ul://alice/datasets/my-shapes',
    'epochs=50',
    ...SMALL,
    'project=cli',
    'name=stopped',
    'watch',
  );
  const training = async () =>
    (
      await call<{ job: { status: string } | null }>(server, 'GET', '/api/models/alice/cli/stopped/training', {
        key: alice,
      })
    ).body.job;
  await eventually(
    async () => (await training())?.status === 'running',
    `the training to run; agent log:\n${agent.output().slice(-2000)}`,
    180_000,
  );
  const cancelled = await call(server, 'DELETE', '/api/models/alice/cli/stopped/training', { key: alice });
  t.match(cancelled.body, { success: true, status: 'cancelled' });
  const watched = await watching;
  t.equal(watched.code, 1, watched.out.slice(-3000));
  t.match(watched.out, /Error: Cloud job cancelled/);
  t.notMatch(watched.out, /Traceback|AttributeError/);
  const downloaded = await ul('download', 'model=ul://alice/cli/stopped');
  t.equal(downloaded.code, 1);
  t.match(downloaded.out, /Error: Cloud job cancelled/);
  t.notMatch(downloaded.out, /Traceback|AttributeError/);
});
