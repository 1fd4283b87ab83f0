/**
 * `npm run bench:predict`: model inference through `POST /api/models/{owner}/{project}/{model}/predict`.
 *
 * A real control plane (own database, BILLING_ENABLED=false, rate limits off) and a `vp-worker` agent (process runtime,
 * the trainer venv) that makes the models' automatic ONNX exports. The model: yolo11n (from its YAML, untrained, 80
 * classes) at 640 px; the image: a 640 × 480 JPEG made here. Figures:
 *   - latency: BENCH_REQUESTS sequential requests, p50 and p95, request sent to response parsed by the client;
 *   - throughput: 4 concurrent clients for BENCH_SECONDS, responses per second;
 *   - the ceiling, in the same run: Python onnxruntime running the same ONNX file (downloaded from the export) on the
 *     same JPEG bytes with ultralytics' own pre- and post-processing (bench/predict_ceiling.py), one image at a time:
 *     its p50 and its images per second;
 *   - both sides are measured in ROUNDS alternating rounds (Python, then latency, then throughput), so that a burst
 *     of other work on the machine weighs on both alike rather than on whichever ran at the time; each ratio is the
 *     median of the rounds' ratios, printed with their spread;
 *   - where the time goes (medians over the sequential requests): the model's own steps as its answer's `speed`
 *     reports them (letterbox and tensor, session run, post-processing), the rest of the control plane's call
 *     (`functionTimeCall` less those: reading the body, decoding, the worker round trip) and the rest of the request
 *     (HTTP, multipart and JSON); beside Python's steps (decode, letterbox and tensor, session run, NMS and scaling);
 *   - peak RSS of the control plane and its inference worker processes together once 10 models (distinct weights) have
 *     each predicted and are cached: printed.
 * Targets (issue 40): p50 ≤ 0.9 × the Python p50; throughput ≥ 1.1 × the Python images per second.
 * Environment: BENCH_REQUESTS (60), BENCH_SECONDS (20), BENCH_MODELS (10), TEST_PG_URL, BENCH_SERVER_NODE_ARGS (e.g.
 * `--cpu-prof --cpu-prof-dir=DIR`: the inference workers inherit them, and profile too).
 */
import { readFileSync, rmSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { uploadWeights } from '../test/helpers/models.ts';
import type { World } from '../test/helpers/world.ts';
import {
  adminQuery,
  median,
  positiveInt,
  ratioOfRounds,
  recordResult,
  runBenchmark,
  spreadText,
  startControlPlane,
  treeRssBytes,
  type Figure,
  SERVER_NODE_ARGS,
} from './lib.ts';
import {
  BenchApi,
  benchImage,
  helperTap,
  run,
  startExportHost,
  trainerEnv,
  ultralyticsConfig,
  untrainedWeights,
  VENV,
} from './trainer-env.ts';

const REQUESTS = positiveInt('BENCH_REQUESTS', 60);
const SECONDS = positiveInt('BENCH_SECONDS', 20);
const MODELS = positiveInt('BENCH_MODELS', 10);
const CLIENTS = 4;
const ROUNDS = 3;
const IMGSZ = 640;
const TARGET_LATENCY = 0.9;
const TARGET_THROUGHPUT = 1.1;
/** How long a model's automatic ONNX export may take. */
const EXPORT_TIMEOUT_MS = 10 * 60_000;

const database = `vp_bench_predict_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-predict-'));
const { t, runTeardowns } = helperTap();
const server = new BenchApi();

/** Where one request's milliseconds went, as its answer tells. */
interface RequestTimes {
  total: number;
  /** The control plane's `functionTimeCall`. */
  call: number;
  speed: { preprocess: number; inference: number; postprocess: number };
}

/** One predict request: from sending it to its parsed response, and the times its answer reports. */
async function predict(path: string, image: Buffer): Promise<RequestTimes> {
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(image)], { type: 'image/jpeg' }), 'bench.jpg');
  form.set('imgsz', String(IMGSZ));
  const started = performance.now();
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}` },
    body: form,
  });
  const body = (await response.json()) as {
    images?: Array<{ speed: RequestTimes['speed'] }>;
    metadata?: { functionTimeCall: number };
    error?: string;
  };
  if (response.status !== 200 || body.images?.length !== 1)
    throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(body).slice(0, 500)}`);
  return {
    total: performance.now() - started,
    call: body.metadata!.functionTimeCall * 1000,
    speed: body.images[0].speed,
  };
}

/** The first predict of a model waits for its ONNX export; retried while the export is not done (503). */
async function firstPredict(path: string, image: Buffer): Promise<void> {
  const started = performance.now();
  for (;;) {
    try {
      await predict(path, image);
      return;
    } catch (error) {
      if (!/ 503 /.test((error as Error).message) || performance.now() - started > EXPORT_TIMEOUT_MS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** The download URL of the model's completed automatic ONNX export, once it is completed. */
async function exportedOnnx(owner: string, model: string): Promise<string> {
  const started = performance.now();
  for (;;) {
    const { exports } = await server.call<{
      exports: Array<{ format: string; status: string; file?: { downloadUrl: string } }>;
    }>('GET', `/api/models/${owner}/bench/${model}/exports`);
    const onnx = exports.find((e) => e.format === 'onnx' && e.status === 'completed');
    if (onnx?.file) return onnx.file.downloadUrl;
    if (performance.now() - started > EXPORT_TIMEOUT_MS)
      throw new Error(`no completed onnx export of ${model}: ${JSON.stringify(exports)}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];

async function main(): Promise<void> {
  const config = ultralyticsConfig(join(work, 'yolo-config'));
  const env = trainerEnv(config);
  const image = await benchImage();
  const imageFile = join(work, 'bench.jpg');
  writeFileSync(imageFile, image);
  let versions = { ultralytics: '', torch: '' };
  for (let i = 0; i < MODELS; i++) versions = await untrainedWeights(join(work, `model-${i}.pt`), env, { seed: i });

  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const loadAtStart = loadavg()[0];
  const { child, base } = await startControlPlane('control-plane', {
    databaseName: database,
    dataDir,
    env: { BILLING_ENABLED: 'false' },
    nodeArgs: SERVER_NODE_ARGS,
  });
  server.url = base;
  server.key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const { username: owner } = await server.call<{ username: string }>('GET', '/api/account/summary');
  await server.call('POST', '/api/projects', { project: 'bench', name: 'Bench' });
  await startExportHost(t, server, database, work, env);
  const paths: string[] = [];
  for (let i = 0; i < MODELS; i++) {
    const { id } = await server.call<{ id: string }>('POST', '/api/models', {
      project: 'bench',
      model: `model-${i}`,
      trainArgs: { imgsz: IMGSZ },
    });
    await uploadWeights(
      { server } as unknown as World,
      server.key,
      id,
      readFileSync(join(work, `model-${i}.pt`)),
      'best.pt',
    );
    paths.push(`/api/models/${owner}/bench/model-${i}/predict`);
  }
  const [path] = paths;
  process.stderr.write(`waiting for the automatic ONNX exports of the ${MODELS} models…\n`);
  // Every export is done before anything is timed: the host's exporter would take the cores from both sides.
  for (let i = 0; i < MODELS; i++) await exportedOnnx(owner, `model-${i}`);
  await firstPredict(path, image);

  const onnxFile = join(work, 'model-0.onnx');
  writeFileSync(onnxFile, Buffer.from(await (await fetch(await exportedOnnx(owner, 'model-0'))).arrayBuffer()));
  for (let i = 0; i < 5; i++) await predict(path, image);
  const ceilingTimes: number[] = [];
  const requests: RequestTimes[] = [];
  const rounds: Array<{ p50: number; throughput: number; ceilingP50: number; ceilingThroughput: number }> = [];
  let pythonPhases: Record<string, number> = {};
  for (let round = 1; round <= ROUNDS; round++) {
    // The control plane is idle while Python runs, and Python has exited before the control plane is timed.
    process.stderr.write(`round ${round}/${ROUNDS}: Python onnxruntime with ultralytics pre/post-processing…\n`);
    const perRound = Math.ceil(REQUESTS / ROUNDS);
    const ceilingRun = await run(
      join(VENV, 'bin/python'),
      [
        join('bench', 'predict_ceiling.py'),
        onnxFile,
        imageFile,
        '--imgsz',
        String(IMGSZ),
        '--iterations',
        String(perRound),
      ],
      { cwd: process.cwd(), env },
    );
    const measured = JSON.parse(ceilingRun.out.trim().split('\n').pop()!) as {
      times_ms: number[];
      throughput_ips: number;
      phases_ms: Record<string, number>;
    };
    ceilingTimes.push(...measured.times_ms);
    pythonPhases = measured.phases_ms;
    process.stderr.write(
      `round ${round}/${ROUNDS}: ${perRound} sequential requests, then ${CLIENTS} clients for ${SECONDS / ROUNDS} s…\n`,
    );
    const latencies: number[] = [];
    for (let i = 0; i < perRound; i++) {
      const times = await predict(path, image);
      requests.push(times);
      latencies.push(times.total);
    }
    let answered = 0;
    const until = performance.now() + (SECONDS / ROUNDS) * 1000;
    const clientsStarted = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (performance.now() < until) {
          await predict(path, image);
          answered++;
        }
      }),
    );
    rounds.push({
      p50: quantile(latencies, 0.5),
      throughput: answered / ((performance.now() - clientsStarted) / 1000),
      ceilingP50: quantile(measured.times_ms, 0.5),
      ceilingThroughput: measured.throughput_ips,
    });
  }
  const latencies = requests.map((r) => r.total);
  const throughput = median(rounds.map((r) => r.throughput));
  const ceiling = {
    p50_ms: quantile(ceilingTimes, 0.5),
    p95_ms: quantile(ceilingTimes, 0.95),
    throughput_ips: median(rounds.map((r) => r.ceilingThroughput)),
  };
  const latencyRatio = ratioOfRounds(rounds.map((r) => r.p50 / r.ceilingP50));
  const throughputRatio = ratioOfRounds(rounds.map((r) => r.throughput / r.ceilingThroughput));

  process.stderr.write(`memory: one predict on each of ${MODELS} models…\n`);
  let peak = treeRssBytes(child.proc.pid!);
  const sampler = setInterval(() => (peak = Math.max(peak, treeRssBytes(child.proc.pid!))), 50);
  for (const other of paths.slice(1)) await firstPredict(other, image);
  clearInterval(sampler);
  peak = Math.max(peak, treeRssBytes(child.proc.pid!));

  const p50 = quantile(latencies, 0.5);
  const p95 = quantile(latencies, 0.95);
  const latency: Figure = {
    figure: 'predict p50 latency (640 px yolo11n, one request at a time)',
    value: p50,
    unit: 'ms',
    ceiling: ceiling.p50_ms,
    ...latencyRatio,
    target: `<= ${TARGET_LATENCY} x Python`,
    pass: latencyRatio.ratio <= TARGET_LATENCY,
  };
  const tail: Figure = {
    figure: 'predict p95 latency',
    value: p95,
    unit: 'ms',
    ceiling: ceiling.p95_ms,
    ratio: p95 / ceiling.p95_ms,
  };
  const rate: Figure = {
    figure: `predict throughput, ${CLIENTS} concurrent clients`,
    value: throughput,
    unit: 'img/s',
    ceiling: ceiling.throughput_ips,
    ...throughputRatio,
    target: `>= ${TARGET_THROUGHPUT} x Python`,
    pass: throughputRatio.ratio >= TARGET_THROUGHPUT,
  };
  const memory: Figure = {
    figure: `control-plane peak RSS with its inference workers, ${MODELS} models cached`,
    value: peak / 2 ** 20,
    unit: 'MiB',
  };
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  console.log(
    `\nbench:predict — ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), load average ${loadAtStart.toFixed(2)} at start, node ${process.version}, ultralytics ${versions.ultralytics}`,
  );
  console.log(
    `model: yolo11n (untrained, 80 classes), automatic ONNX export (dynamic), imgsz ${IMGSZ}; image: 640 x 480 JPEG, ${image.length} bytes`,
  );
  console.log(
    `latency over ${REQUESTS} requests: p50 ${ms(p50)}, p95 ${ms(p95)}; Python onnxruntime + ultralytics: p50 ${ms(ceiling.p50_ms)}, p95 ${ms(ceiling.p95_ms)}`,
  );
  console.log(
    `  p50 ratio ${latencyRatio.ratio.toFixed(3)} (median of the rounds' ${rounds.map((r) => (r.p50 / r.ceilingP50).toFixed(3)).join(', ')}, ${spreadText(latencyRatio.spread)}; target <= ${TARGET_LATENCY}) ${latency.pass ? 'PASS' : 'FAIL'}`,
  );
  const step = (values: number[]) => ms(median(values)).padStart(9);
  const speed = (name: keyof RequestTimes['speed']) => requests.map((r) => r.speed[name]);
  const modelMs = (r: RequestTimes) => r.speed.preprocess + r.speed.inference + r.speed.postprocess;
  console.log('  where the time goes, medians (the appliance as its answers report it | Python):');
  console.log(`    letterbox + tensor ${step(speed('preprocess'))} | ${ms(pythonPhases.preprocess)}`);
  console.log(`    session run        ${step(speed('inference'))} | ${ms(pythonPhases.inference)}`);
  console.log(`    post-processing    ${step(speed('postprocess'))} | ${ms(pythonPhases.postprocess)} (NMS, scaling)`);
  console.log(
    `    rest of the call   ${step(requests.map((r) => r.call - modelMs(r)))} | ${ms(pythonPhases.decode)} (appliance: body, decode, worker round trip; Python: decode)`,
  );
  console.log(`    HTTP, multipart, JSON ${step(requests.map((r) => r.total - r.call)).trimStart()} | –`);
  console.log(
    `throughput, ${CLIENTS} clients for ${SECONDS} s: ${throughput.toFixed(2)} img/s; Python one at a time: ${ceiling.throughput_ips.toFixed(2)} img/s`,
  );
  console.log(
    `  ratio ${throughputRatio.ratio.toFixed(3)} (median of the rounds' ${rounds.map((r) => (r.throughput / r.ceilingThroughput).toFixed(3)).join(', ')}, ${spreadText(throughputRatio.spread)}; target >= ${TARGET_THROUGHPUT}) ${rate.pass ? 'PASS' : 'FAIL'}`,
  );
  console.log(
    `control-plane peak RSS, its inference worker processes included, with ${MODELS} models cached: ${(peak / 2 ** 20).toFixed(0)} MiB`,
  );
  recordResult('predict', [latency, tail, rate, memory], {
    seconds: SECONDS,
    models: MODELS,
    rounds,
    requests,
    ceiling: { ...ceiling, times: ceilingTimes, phases: pythonPhases },
    versions,
  });
}

await runBenchmark('bench:predict', main, async () => {
  await runTeardowns();
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
