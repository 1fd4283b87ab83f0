/**
 * `npm run bench:deploy`: a dedicated deployment's throughput and tail latency, its replace under load, its cold start.
 *
 * A real control plane (own database, BILLING_ENABLED=false, rate limits off) and a `vp-worker` agent (process runtime,
 * the trainer venv) that makes the models' automatic ONNX exports and runs the deployments' inference servers. The
 * model: yolo11n (from its YAML, untrained) at 640 px; the image: a 640 × 480 JPEG made here. Figures, each with
 * BENCH_CLIENTS concurrent clients for BENCH_SECONDS in all, in BENCH_ROUNDS turns taken by every target in order, so a
 * spell of a busier machine weighs on them alike (requests per second, and the p99 of those requests); a ratio to the
 * ceiling is the median of the rounds' ratios, printed with their spread, so one noisy round cannot flip a verdict:
 *   - the ceiling, in the same run: the same inference server called in-process: its request handler and model
 *     (routes.ts, ServedModel) on the same ONNX file, listening in this process, with the deployment's CPU count as
 *     onnxruntime threads; called like the others, so the clients' own work weighs on every figure alike;
 *   - the revision's own server (its URL and token, as the control plane calls it);
 *   - the service URL (`/svc/{id}/predict` with the deployment's key): target ≥ 90 % of the ceiling;
 *   - the platform's predict (`POST /api/deployments/{owner}/{deployment}/predict`): target ≥ 75 % of the ceiling.
 * Then: a replace (another model) under load through the service URL, until the old server has stopped: errors
 * (target 0) and the p99 of the requests during the switch, printed; and the cold start of a default-size deployment scaled to zero: the first request's
 * latency, printed.
 * Environment: BENCH_SECONDS (20), BENCH_ROUNDS (5), BENCH_CLIENTS (4), BENCH_CPU (2: the deployment's cpu), BENCH_IDLE_SECONDS (5), TEST_PG_URL.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SERVER_ENV, SERVICE_ROUTES } from '@vp/inference-server/contract';
import { handle, type ServerState } from '../inference-server/src/routes.ts';
import { ServedModel } from '../inference-server/src/served-model.ts';
import { readSettings } from '../inference-server/src/settings.ts';
import { openToken, type SealedToken } from '../control-plane/src/deployments/deployment-tokens.ts';
import { CredentialCipher } from '../control-plane/src/integrations/credential-cipher.ts';
import { uploadWeights } from '../test/helpers/models.ts';
import type { World } from '../test/helpers/world.ts';
import {
  adminQuery,
  positiveInt,
  ratioOfRounds,
  recordResult,
  runBenchmark,
  spreadText,
  startControlPlane,
  type Figure,
} from './lib.ts';
import {
  BenchApi,
  benchImage,
  exportsSettled,
  helperTap,
  startExportHost,
  trainerEnv,
  ultralyticsConfig,
  untrainedWeights,
} from './trainer-env.ts';

const SECONDS = positiveInt('BENCH_SECONDS', 20);
const ROUNDS = positiveInt('BENCH_ROUNDS', 5);
const CLIENTS = positiveInt('BENCH_CLIENTS', 4);
const CPU = positiveInt('BENCH_CPU', 2);
const IDLE_SECONDS = positiveInt('BENCH_IDLE_SECONDS', 5);
const IMGSZ = 640;
const TARGET_DIRECT = 0.9;
const TARGET_PROXY = 0.75;
const READY_TIMEOUT_MS = 10 * 60_000;

const database = `vp_bench_deploy_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-deploy-'));
const { t, runTeardowns } = helperTap();
const server = new BenchApi();

/** One request of a target: resolves with its milliseconds, throws with what went wrong. */
type Call = () => Promise<number>;

function httpCall(url: string, token: string, image: Buffer): Call {
  return async () => {
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(image)], { type: 'image/jpeg' }), 'bench.jpg');
    form.set('imgsz', String(IMGSZ));
    const started = performance.now();
    const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    const body = (await response.json()) as { images?: unknown[]; error?: string };
    if (response.status !== 200 || body.images?.length !== 1)
      throw new Error(`POST ${url}: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    return performance.now() - started;
  };
}

interface Load {
  rate: number;
  p99: number;
  latencies: Array<{ at: number; ms: number }>;
  errors: string[];
}

/** The turns of one target merged: its rate over the time it was loaded. */
function merged(turns: Turn[]): Load {
  const latencies = turns.flatMap((one) => one.latencies);
  const seconds = turns.reduce((sum, one) => sum + one.seconds, 0);
  return {
    rate: latencies.length / seconds,
    p99: p99(latencies.map((l) => l.ms)),
    latencies,
    errors: turns.flatMap((one) => one.errors),
  };
}

interface Turn {
  latencies: Load['latencies'];
  errors: string[];
  seconds: number;
}

/** One target's turn: CLIENTS clients calling back to back until `until` returns true. */
async function turn(call: Call, until: () => boolean): Promise<Turn> {
  const latencies: Load['latencies'] = [];
  const errors: string[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (!until()) {
        const at = performance.now();
        try {
          latencies.push({ at, ms: await call() });
        } catch (error) {
          errors.push((error as Error).message);
        }
      }
    }),
  );
  return { latencies, errors, seconds: (performance.now() - started) / 1000 };
}

const p99 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(0.99 * values.length))] ?? NaN;

async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = READY_TIMEOUT_MS,
  pollMs = 200,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

const status = async (owner: string, slug: string) =>
  (
    await server.call<{ deployment: { status: string; statusMessage?: string } }>(
      'GET',
      `/api/deployments/${owner}/${slug}`,
    )
  ).deployment;
/** The control plane's secret: revisions' tokens are sealed under it, and opened here to reach their servers directly. */
const SECRET = randomBytes(32).toString('hex');
// Deployment ids are 24 hex digits from the API: safe in the SQL text (adminQuery takes no parameters).
const liveRevisions = async (id: string) =>
  (
    await adminQuery<SealedToken & { id: string; service_url: string }>(
      `select r.id, r.service_url, d.workspace_id as "workspaceId", r.token_key_id as "tokenKeyId", r.token_sealed as "tokenSealed"
         from deployment_revisions r join deployments d on d.id = r.deployment_id where r.deployment_id = '${id}' and r.state = 'live'`,
      database,
    )
  ).rows.map((row) => ({
    id: row.id,
    service_url: row.service_url,
    token: openToken(new CredentialCipher(SECRET), row),
  }));

async function deploy(
  owner: string,
  slug: string,
  model: string,
  size: { cpu: number; memoryGi: number },
): Promise<{ id: string; apiKey: string }> {
  const created = await server.call<{ id: string; apiKey: string }>('POST', `/api/deployments/${owner}`, {
    project: 'bench',
    model,
    deployment: slug,
    name: slug,
    region: 'us-central1',
    ...size,
  });
  await until(`${slug} ready`, async () => {
    const { status: now, statusMessage } = await status(owner, slug);
    if (now === 'failed') throw new Error(`${slug} failed: ${statusMessage}`);
    return now === 'ready';
  });
  return created;
}

async function main(): Promise<void> {
  const env = trainerEnv(ultralyticsConfig(join(work, 'yolo-config')));
  const image = await benchImage();
  let versions = { ultralytics: '', torch: '' };
  for (let i = 0; i < 2; i++) versions = await untrainedWeights(join(work, `model-${i}.pt`), env, { seed: i });

  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const loadAtStart = loadavg()[0]!;
  const { base } = await startControlPlane('control-plane', {
    databaseName: database,
    dataDir,
    env: { BILLING_ENABLED: 'false', DEPLOYMENT_IDLE_SECONDS: String(IDLE_SECONDS), SIGNING_SECRET: SECRET },
  });
  server.url = base;
  server.key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const { username: owner } = await server.call<{ username: string }>('GET', '/api/account/summary');
  await server.call('POST', '/api/projects', { project: 'bench', name: 'Bench' });
  const agent = await startExportHost(t, server, database, work, env);
  for (let i = 0; i < 2; i++) {
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
  }
  process.stderr.write('waiting for the automatic ONNX exports…\n');
  await exportsSettled(database);

  process.stderr.write(`deploying model-0 (${CPU} CPU)…\n`);
  const served = await deploy(owner, 'bench', 'model-0', { cpu: CPU, memoryGi: 4 }).catch((error: Error) => {
    throw new Error(`${error.message}\n${agent.output().slice(-3000)}`);
  });
  const [revision] = await liveRevisions(served.id);
  const { exports } = await server.call<{
    exports: Array<{ format: string; status: string; file?: { downloadUrl: string } }>;
  }>('GET', `/api/models/${owner}/bench/model-0/exports`);
  const onnxFile = join(work, 'model-0.onnx');
  writeFileSync(
    onnxFile,
    Buffer.from(
      await (
        await fetch(exports.find((e) => e.format === 'onnx' && e.status === 'completed')!.file!.downloadUrl)
      ).arrayBuffer(),
    ),
  );
  const settings = readSettings({
    [SERVER_ENV.model]: onnxFile,
    [SERVER_ENV.token]: revision!.token,
    [SERVER_ENV.threads]: String(CPU),
  });
  const state: ServerState = { settings, model: await ServedModel.load(settings), camera: undefined };
  const inProcess = createServer((req, res) => void handle(state, req, res));
  await new Promise<void>((listening) => inProcess.listen(0, '127.0.0.1', listening));
  const targets: Record<'ceiling' | 'revision' | 'service' | 'proxy', Call> = {
    ceiling: httpCall(
      `http://127.0.0.1:${(inProcess.address() as AddressInfo).port}${SERVICE_ROUTES.predict}`,
      settings.token,
      image,
    ),
    revision: httpCall(`${revision!.service_url}/predict`, revision!.token, image),
    service: httpCall(`${base}/svc/${served.id}/predict`, served.apiKey, image),
    proxy: httpCall(`${base}/api/deployments/${owner}/bench/predict`, server.key, image),
  };

  const names = Object.keys(targets) as Array<keyof typeof targets>;
  for (const name of names) for (let i = 0; i < 3; i++) await targets[name]();
  const turns = Object.fromEntries(names.map((name) => [name, [] as Turn[]]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of names) {
      process.stderr.write(
        `round ${round}/${ROUNDS}, ${name}: ${CLIENTS} clients for ${(SECONDS / ROUNDS).toFixed(1)} s…\n`,
      );
      const end = performance.now() + (SECONDS / ROUNDS) * 1000;
      const one = await turn(targets[name], () => performance.now() >= end);
      if (one.errors.length > 0) throw new Error(`${name}: ${one.errors.length} errors, first: ${one.errors[0]}`);
      turns[name]!.push(one);
    }
  }
  const results = Object.fromEntries(names.map((name) => [name, merged(turns[name]!)])) as Record<
    keyof typeof targets,
    Load
  >;
  inProcess.closeAllConnections();
  await new Promise((closed) => inProcess.close(closed));
  await state.model!.close();

  process.stderr.write('replace under load (service URL)…\n');
  let switched = false;
  const replacing = turn(targets.service, () => switched).then((one) => merged([one]));
  const patchedAt = performance.now();
  await server.call('PATCH', `/api/deployments/${owner}/bench`, {
    action: 'replace',
    project: 'bench',
    model: 'model-1',
  });
  await until(
    'the replace to complete',
    async () =>
      (await status(owner, 'bench')).status === 'ready' && (await liveRevisions(served.id))[0]?.id !== revision!.id,
  );
  const switchedAt = performance.now();
  // The old revision drains, then stops: the load goes on a second past its job's end.
  await until(
    'the old server to stop',
    async () =>
      (
        await adminQuery(
          `select 1 from jobs j join deployment_revisions r on r.job_id = j.id where r.id = '${revision!.id}' and j.status not in ('queued', 'running')`,
          database,
        )
      ).rowCount,
    120_000,
  );
  await new Promise((resolve) => setTimeout(resolve, 1000));
  switched = true;
  const replace = await replacing;
  const duringSwitch = replace.latencies.filter((l) => l.at >= patchedAt && l.at <= switchedAt + 3000).map((l) => l.ms);

  process.stderr.write(`cold start: a default-size deployment, scaled to zero after ${IDLE_SECONDS} s…\n`);
  const cold = await deploy(owner, 'cold', 'model-0', { cpu: 1, memoryGi: 2 });
  await until(
    'scale to zero',
    async () =>
      (await adminQuery(`select 1 from deployments where id = '${cold.id}' and scaled_to_zero`, database)).rowCount,
    120_000,
    500,
  );
  const coldMs = await httpCall(`${base}/svc/${cold.id}/predict`, cold.apiKey, image)();
  const warmMs = await httpCall(`${base}/svc/${cold.id}/predict`, cold.apiKey, image)();

  const ceiling = results.ceiling;
  const rate = (one: Turn) => one.latencies.length / one.seconds;
  const ofRounds = (name: 'revision' | 'service' | 'proxy') =>
    ratioOfRounds(turns[name]!.map((one, round) => rate(one) / rate(turns.ceiling![round]!)));
  const figure = (name: 'revision' | 'service' | 'proxy', label: string, target?: number): Figure => {
    const { ratio, spread } = ofRounds(name);
    return {
      figure: `${label}, ${CLIENTS} clients`,
      value: results[name].rate,
      unit: 'req/s',
      ceiling: ceiling.rate,
      ratio,
      spread,
      ...(target !== undefined && { target: `>= ${target * 100}% of in-process`, pass: ratio >= target }),
    };
  };
  const figures: Figure[] = [
    figure('revision', "the revision's own server"),
    figure('service', 'service URL (/svc/{id}/predict)', TARGET_DIRECT),
    figure('proxy', 'platform predict (/api/deployments/…/predict)', TARGET_PROXY),
    {
      figure: 'proxy p99 latency',
      value: results.proxy.p99,
      unit: 'ms',
      ceiling: ceiling.p99,
      ratio: results.proxy.p99 / ceiling.p99,
    },
    {
      figure: 'replace under load: failed requests',
      value: replace.errors.length,
      unit: 'requests',
      target: '0',
      pass: replace.errors.length === 0,
    },
    { figure: 'replace under load: p99 during the switch', value: p99(duringSwitch), unit: 'ms' },
    { figure: 'cold start from zero (first request)', value: coldMs, unit: 'ms' },
  ];
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const roundsText = ({ ratio, spread }: { ratio: number; spread?: number }) =>
    `${(ratio * 100).toFixed(1)} % of in-process (median of ${ROUNDS} rounds, ${spreadText(spread)})`;
  console.log(
    `\nbench:deploy — ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), load average ${loadAtStart.toFixed(2)} at start, node ${process.version}, ultralytics ${versions.ultralytics}`,
  );
  console.log(
    `model: yolo11n (untrained), automatic ONNX export, imgsz ${IMGSZ}; deployment: ${CPU} CPU, process runtime; image: 640 x 480 JPEG, ${image.length} bytes; ${CLIENTS} clients for ${SECONDS} s each, in ${ROUNDS} turns`,
  );
  for (const [name, result] of Object.entries(results)) {
    console.log(
      `  ${name.padEnd(9)} ${result.rate.toFixed(2).padStart(8)} req/s  p99 ${ms(result.p99).padStart(10)}  ${name === 'ceiling' ? '' : roundsText(ofRounds(name as 'revision' | 'service' | 'proxy'))}`,
    );
  }
  for (const f of figures.filter((f) => f.target))
    console.log(`  ${f.figure}: target ${f.target} ${f.pass ? 'PASS' : 'FAIL'}`);
  console.log(
    `replace under load: ${replace.latencies.length} answered, ${replace.errors.length} failed${replace.errors[0] ? ` (first: ${replace.errors[0]})` : ''}; switch took ${((switchedAt - patchedAt) / 1000).toFixed(1)} s, p99 during it ${ms(p99(duringSwitch))} (${duringSwitch.length} requests)`,
  );
  console.log(`cold start from zero: first request ${ms(coldMs)}, the next ${ms(warmMs)}`);
  recordResult('deploy', figures, {
    seconds: SECONDS,
    rounds: ROUNDS,
    clients: CLIENTS,
    cpu: CPU,
    rates: Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.rate])),
    coldMs,
    warmMs,
    versions,
  });
}

await runBenchmark('bench:deploy', main, async () => {
  await runTeardowns();
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
