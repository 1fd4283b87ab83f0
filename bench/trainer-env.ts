// What the benchmarks that run the real trainer share: the trainer venv, its environment, running its commands, and
// calling the control plane with the test helpers.
import { spawn } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import type { Test } from 'tap';
import { enrollAgent, runAgent } from '../test/helpers/agent.ts';
import { call } from '../test/helpers/server.ts';
import { adminQuery, ROOT } from './lib.ts';

export const VENV = join(ROOT, '.venv-trainer');

/**
 * The environment every trainer here gets: the agent's view of ours without any platform setting, the venv first on
 * PATH (as the process runtime puts it), the shared temporary ultralytics config.
 */
export function trainerEnv(config: string): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('ULTRALYTICS_'),
    ),
  );
  return {
    ...env,
    VIRTUAL_ENV: VENV,
    PATH: `${join(VENV, 'bin')}:${env.PATH ?? '/usr/bin:/bin'}`,
    YOLO_CONFIG_DIR: config,
    YOLO_OFFLINE: '1',
    YOLO_AUTOINSTALL: 'false',
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (in clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Runs a command to its end; rejects with its last output when it fails. `onTick` runs every 100 ms meanwhile. */
export function run(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; onTick?: () => void },
): Promise<{ out: string; seconds: number }> {
  const started = performance.now();
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const ticker = options.onTick && setInterval(options.onTick, 100);
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out = (out + chunk).slice(-20_000)));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (out = (out + chunk).slice(-20_000)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearInterval(ticker);
      process.off('exit', kill);
      if (code === 0) resolve({ out, seconds: (performance.now() - started) / 1000 });
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${out.slice(-3000)}`));
    });
  });
}

/** A copy of the venv's ultralytics settings (offline, integrations off, fonts) whose datasets, runs and weights stay in `dir`. */
export function ultralyticsConfig(dir: string): string {
  cpSync(join(VENV, 'yolo-config/Ultralytics'), join(dir, 'Ultralytics'), { recursive: true });
  const file = join(dir, 'Ultralytics/settings.json');
  const settings = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  Object.assign(settings, {
    datasets_dir: join(dir, 'datasets'),
    runs_dir: join(dir, 'runs'),
    weights_dir: join(dir, 'weights'),
    api_key: '',
  });
  writeFileSync(file, JSON.stringify(settings, null, 2));
  return dir;
}

/** All the test helpers use of tap, for a benchmark: teardowns (run by `runTeardowns`, last first) and failures (thrown). */
export function helperTap(): { t: Test; runTeardowns: () => Promise<void> } {
  const teardowns: Array<() => unknown> = [];
  const t = {
    teardown: (fn: () => unknown) => void teardowns.push(fn),
    fail: (message: string) => {
      throw new Error(message);
    },
  } as unknown as Test;
  return {
    t,
    runTeardowns: async () => {
      for (const teardown of teardowns.reverse()) await teardown();
    },
  };
}

/** The control plane under benchmark and the key it is called with (both known once it started); a call of 300 or more throws. */
export class BenchApi {
  url = '';
  key = '';

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await call<T>(this, method, path, { key: this.key, body });
    if (response.status >= 300)
      throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  }
}

/**
 * Untrained YOLO weights from a model YAML (nothing downloaded), saved to `file`; a seed makes each file's weights, and
 * so its SHA-256, distinct. Returns the ultralytics and torch versions.
 */
export async function untrainedWeights(
  file: string,
  env: Record<string, string>,
  options: { yaml?: string; seed?: number } = {},
): Promise<{ ultralytics: string; torch: string }> {
  const script = `import torch, ultralytics; from ultralytics import YOLO; torch.manual_seed(${options.seed ?? 0}); YOLO(${JSON.stringify(options.yaml ?? 'yolo11n.yaml')}).save(${JSON.stringify(file)}); print(ultralytics.__version__, torch.__version__)`;
  const { out } = await run(join(VENV, 'bin/python'), ['-c', script], { cwd: dirname(file), env });
  const [ultralytics, torch] = out.trim().split('\n').pop()!.split(' ');
  return { ultralytics, torch };
}

/**
 * A `vp-worker` agent (process runtime, the trainer venv) enrolled with the control plane under benchmark; resolves once
 * it is connected and reports the onnx exporter.
 */
export async function startExportHost(
  t: Test,
  server: BenchApi,
  database: string,
  work: string,
  env: Record<string, string>,
): Promise<{ output(): string }> {
  const { enrollmentToken } = await server.call<{ enrollmentToken: string }>('POST', '/api/hosts', {
    name: 'bench-host',
  });
  const agentConfig = join(work, 'agent.json');
  await enrollAgent(t, server.url, enrollmentToken, agentConfig);
  const agent = runAgent(t, agentConfig, {
    ...env,
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(work, 'jobs'),
    VP_WORKER_PROCESS_VENV: VENV,
  });
  for (
    let tries = 0;
    !(await adminQuery(`select 1 from hosts where state = 'connected' and 'onnx' = any(exporters)`, database)).rowCount;
    tries++
  ) {
    if (tries > 600)
      throw new Error(`the agent did not connect with the onnx exporter:\n${agent.output().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return agent;
}

/**
 * Resolves once no export job is unfinished and, given a model's URL name, once that model's automatic ONNX export
 * has ended (it is queued just after the job or webhook that brought the weights): that export runs on the same
 * cores as what a benchmark times next.
 */
export async function exportsSettled(database: string, modelSlug?: string): Promise<void> {
  if (modelSlug !== undefined && !/^[a-z0-9-]+$/.test(modelSlug)) throw new Error(`not a model URL name: ${modelSlug}`);
  const modelPending = modelSlug
    ? ` or not exists (select 1 from model_exports e join models m on m.id = e.model_id where m.slug = '${modelSlug}' and e.status is not null)`
    : '';
  for (
    let tries = 0;
    (
      await adminQuery(
        `select 1 where exists (select 1 from jobs where kind = 'export' and finished_at is null)${modelPending}`,
        database,
      )
    ).rowCount;
    tries++
  ) {
    if (tries > 6000) throw new Error('the automatic ONNX exports did not finish in 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A photo-like 640 × 480 JPEG: smooth gradients under a few filled shapes, so it compresses as camera images do. */
export async function benchImage(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="480">
    <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#6a8"/><stop offset="1" stop-color="#234"/></linearGradient></defs>
    <rect width="640" height="480" fill="url(#g)"/><circle cx="200" cy="220" r="90" fill="#c33"/>
    <rect x="360" y="120" width="180" height="240" fill="#fc4" transform="rotate(12 450 240)"/><ellipse cx="480" cy="400" rx="120" ry="40" fill="#339"/></svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}
