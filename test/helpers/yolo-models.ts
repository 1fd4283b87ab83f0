// Tiny trained YOLO models for the tests, one per task and head: a seeded synthetic dataset drawn by
// test/inference/make_dataset.py, trained from the model YAML with the trainer venv's `yolo train` (nothing downloaded),
// exported with `yolo export format=onnx dynamic=True` as the control plane's automatic export does. Cached by content
// (generator, recipe, ultralytics version) under .cache/test-models/, built once even when several test processes ask at
// the same time (a lock directory, then an atomic rename of the finished folder).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TRAINER_VENV = join(ROOT, '.venv-trainer');
const GENERATOR = join(ROOT, 'test/inference/make_dataset.py');
const CACHE = join(ROOT, '.cache/test-models');

export type FixtureTask = 'detect' | 'segment' | 'semantic' | 'pose' | 'obb' | 'classify' | 'depth';

export interface TrainedModel {
  pt: string;
  onnx: string;
  names: string[];
  task: FixtureTask;
  /** The size it was trained and exported at. */
  imgsz: number;
  /** Seconds the training and export took when this model was built (0 when it came from the cache of another process). */
  buildSeconds: number;
}

interface Recipe {
  task: FixtureTask;
  model: string;
  imgsz: number;
  epochs: number;
  dataset: string[];
  /** `yolo train` arguments besides the model, data and where to write (part of the cache key like everything here). */
  trainArgs: string[];
  /** Extra `yolo export` arguments: nms=False keeps YOLO26's NMS-free (end2end) head, which 8.4 exports only when asked. */
  exportArgs: string[];
}

const DEFAULT_ARCH: Record<FixtureTask, string> = {
  detect: 'yolo11n',
  segment: 'yolo11n-seg',
  semantic: 'yolo26n-sem',
  depth: 'yolo26n-depth',
  pose: 'yolo11n-pose',
  obb: 'yolo11n-obb',
  classify: 'yolo11n-cls',
};

/** Longer training than the parity fixtures need: for tests that need a model that finds the shapes with confidence. */
export interface TrainingOverride {
  imgsz?: number;
  epochs?: number;
  /** Training pictures (the parity fixtures: 32, 45 for classify). */
  pictures?: number;
}

function recipe(task: FixtureTask, arch: string, override: TrainingOverride = {}): Recipe {
  const classify = task === 'classify';
  return {
    task,
    model: `${arch}.yaml`,
    imgsz: override.imgsz ?? 64,
    epochs: override.epochs ?? (classify ? 10 : 20),
    dataset: [
      '--size',
      '96',
      '--train',
      String(override.pictures ?? (classify ? 45 : 32)),
      '--val',
      classify ? '6' : '4',
    ],
    trainArgs: [
      'batch=8',
      'warmup_epochs=1',
      'pretrained=False',
      'amp=False',
      'plots=False',
      'workers=0',
      'device=cpu',
      'val=False',
      'seed=0',
    ],
    exportArgs: arch.startsWith('yolo26') ? ['nms=False'] : [],
  };
}

/** The environment of the trainer venv: first on PATH, offline, its own settings folder. */
export function trainerEnv(configDir: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ULTRALYTICS_')));
  return {
    ...env,
    VIRTUAL_ENV: TRAINER_VENV,
    PATH: `${join(TRAINER_VENV, 'bin')}:${env.PATH ?? '/usr/bin:/bin'}`,
    YOLO_CONFIG_DIR: configDir,
    YOLO_OFFLINE: '1',
    YOLO_AUTOINSTALL: 'false',
  };
}

/** Runs a command to its end; rejects with the tail of its output when it fails. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let tail = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      tail = (tail + chunk).slice(-4000);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (tail = (tail + chunk).slice(-4000)));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${tail}`)),
    );
  });
}

function ultralyticsVersion(): string {
  const init = readFileSync(join(TRAINER_VENV, 'lib/python3.11/site-packages/ultralytics/__init__.py'), 'utf8');
  return /__version__ = "([^"]+)"/.exec(init)?.[1] ?? 'unknown';
}

const building = new Map<string, Promise<TrainedModel>>();

/**
 * A trained model for `task` (and `arch`, a model YAML name without .yaml: yolo26n for the end2end head), trained as
 * `override` says where given (cached apart).
 */
export function trainedModel(
  task: FixtureTask,
  arch = DEFAULT_ARCH[task],
  override: TrainingOverride = {},
): Promise<TrainedModel> {
  const key = `${task}/${arch}/${JSON.stringify(override)}`;
  let promise = building.get(key);
  if (!promise) {
    promise = build(recipe(task, arch, override));
    building.set(key, promise);
  }
  return promise;
}

async function build(r: Recipe): Promise<TrainedModel> {
  const hash = createHash('sha256')
    .update(readFileSync(GENERATOR))
    .update(JSON.stringify(r))
    .update(ultralyticsVersion())
    .digest('hex')
    .slice(0, 16);
  const dir = join(CACHE, `${r.model.replace('.yaml', '')}-${hash}`);
  const done = join(dir, 'model.json');
  mkdirSync(CACHE, { recursive: true });
  const lock = `${dir}.lock`;
  for (;;) {
    if (existsSync(done))
      return {
        ...(JSON.parse(readFileSync(done, 'utf8')) as Omit<TrainedModel, 'pt' | 'onnx'>),
        pt: join(dir, 'model.pt'),
        onnx: join(dir, 'model.onnx'),
      };
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another process is building it; a lock older than 15 minutes belongs to a process that died.
      const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > 15 * 60_000) rmSync(lock, { recursive: true, force: true });
      await sleep(1000);
    }
  }
  try {
    return await trainAndExport(r, dir);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

async function trainAndExport(r: Recipe, dir: string): Promise<TrainedModel> {
  const started = Date.now();
  const work = `${dir}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const env = trainerEnv(join(work, 'settings'));
    const python = join(TRAINER_VENV, 'bin/python');
    const yolo = join(TRAINER_VENV, 'bin/yolo');
    // Semantic models learn from polygon labels (pixels outside every polygon become a 'background' class).
    const drawn = r.task === 'semantic' ? 'segment' : r.task;
    const data = (await runCommand(python, [GENERATOR, drawn, join(work, 'data'), ...r.dataset], { cwd: work, env }))
      .trim()
      .split('\n')
      .pop()!;
    await runCommand(
      yolo,
      [
        'train',
        `task=${r.task}`,
        `model=${r.model}`,
        `data=${data}`,
        `imgsz=${r.imgsz}`,
        `epochs=${r.epochs}`,
        ...r.trainArgs,
        `project=${join(work, 'runs')}`,
        'name=train',
        'exist_ok=True',
      ],
      { cwd: work, env },
    );
    const weights = join(work, 'runs/train/weights');
    await runCommand(
      yolo,
      ['export', `model=${join(weights, 'best.pt')}`, 'format=onnx', 'dynamic=True', ...r.exportArgs],
      { cwd: work, env },
    );
    const result = join(work, 'result');
    mkdirSync(result);
    copyFileSync(join(weights, 'best.pt'), join(result, 'model.pt'));
    copyFileSync(join(weights, 'best.onnx'), join(result, 'model.onnx'));
    const meta = {
      names: datasetNames(r.task, join(work, 'data')),
      task: r.task,
      imgsz: r.imgsz,
      buildSeconds: Math.round((Date.now() - started) / 1000),
    };
    writeFileSync(join(result, 'model.json'), JSON.stringify(meta));
    rmSync(dir, { recursive: true, force: true });
    renameSync(result, dir);
    return { ...meta, pt: join(dir, 'model.pt'), onnx: join(dir, 'model.onnx') };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * Another ONNX export of a trained model, with other `yolo export` arguments (e.g. dynamic=False for a static input,
 * nms=True for NMS inside the graph); cached next to the model, written by an atomic rename.
 */
export async function exportedVariant(model: TrainedModel, args: string[]): Promise<string> {
  const name = `variant-${createHash('sha256').update(args.join(' ')).digest('hex').slice(0, 12)}.onnx`;
  const file = join(model.onnx, '..', name);
  if (existsSync(file)) return file;
  const work = mkdtempSync(`${file}.tmp-`);
  try {
    copyFileSync(model.pt, join(work, 'model.pt'));
    await runCommand(
      join(TRAINER_VENV, 'bin/yolo'),
      ['export', `model=${join(work, 'model.pt')}`, 'format=onnx', ...args],
      { cwd: work, env: trainerEnv(join(work, 'settings')) },
    );
    renameSync(join(work, 'model.onnx'), file);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return file;
}

function datasetNames(task: FixtureTask, data: string): string[] {
  if (task === 'classify') return ['disc', 'square', 'triangle']; // ultralytics sorts the class folders by name
  const yaml = readFileSync(join(data, 'data.yaml'), 'utf8');
  const names = [...yaml.matchAll(/^ {2}\d+: (.+)$/gm)].map((match) => match[1]);
  return task === 'semantic' ? [...names, 'background'] : names;
}
