/**
 * `npm run bench:train`: what the platform adds around a real CPU training.
 *
 * A real control plane (own database, BILLING_ENABLED=false) and a `vp-worker` agent (process runtime, the trainer
 * venv at .venv-trainer, built by installer/trainer/build-trainer-env.sh). The shapes dataset of the e2e tests
 * (64 train / 16 val, 160 px) is ingested, then trained for BENCH_EPOCHS (5) epochs three ways with the same arguments
 * (yolo11n.yaml, imgsz 160, batch 16, workers 0, plots false, device cpu):
 *   - standalone: the exact `yolo train` command line the platform builds, on the ZIP unpacked into a local YOLO
 *     folder, without any platform variable (no ULTRALYTICS_API_KEY), YOLO_OFFLINE=1;
 *   - +reporting: the same with a user key and the platform URL (as on a user's own machine), to tell what the
 *     trainer's platform callbacks cost from what the job machinery costs;
 *   - platform: POST /api/training/start (gpuType cpu) until GET .../training says its job completed; the timeline comes
 *     from the database (job created/assigned/accepted/finished, run created/completed, first training_epochs row).
 * Overhead = (platform total − standalone total) / standalone total within a round, the median over rounds; target < 10%.
 * Then the dataset materialization rate: BENCH_MATERIALIZE_IMAGES (2,000) shapes ingested, turned into a local
 * YOLO dataset by ultralytics' own converter from ul://owner/datasets/slug (NDJSON export + image downloads, as
 * the trainer does), target ≥ 500 images/s; MATERIALIZE_ROUNDS (5, or BENCH_ROUNDS if more) rounds of about two seconds
 * each, the median with its spread: one run read 1195, 495, 461 images/s in three rounds and 1150–1180 in all three
 * of the next, with the converter's own CPU time tripled in the slow ones (the VM, not the code).
 *
 * All trainings share one temporary ultralytics config (a copy of the venv's, its dirs moved into the temporary
 * folder), so no run reuses a dataset an earlier one materialized and nothing is left behind. Everything is repeated
 * BENCH_ROUNDS (3) times, the three trainings in a rotating order (one 5-epoch run here swings by ±15%); medians are printed.
 * Environment: BENCH_EPOCHS, BENCH_ROUNDS, BENCH_MATERIALIZE_IMAGES, TEST_PG_URL, BENCH_SERVER_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`).
 * Everything is stopped and removed at the end; exit status 1 only when something broke (a FAIL verdict does not).
 * Figures go to a JSON file (see recordResult).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { trainCommand } from '../control-plane/src/training/train-args.ts';
import { enrollAgent, runAgent, type Spawned } from '../test/helpers/agent.ts';
import { call } from '../test/helpers/server.ts';
import { createShapesDataset, shapesDataset } from '../test/helpers/training-data.ts';
import type { World } from '../test/helpers/world.ts';
import { adminQuery, positiveInt, recordResult, runBenchmark, startControlPlane, SERVER_NODE_ARGS } from './lib.ts';
import { ratioOfRounds, spreadText } from './lib.ts';
import {
  BenchApi,
  cpuSeconds,
  exportsSettled,
  helperTap,
  run,
  trainerEnv,
  ultralyticsConfig,
  VENV,
} from './trainer-env.ts';

const EPOCHS = positiveInt('BENCH_EPOCHS', 5);
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
/** Materializing takes seconds: more rounds than the trainings, so that a few seconds of a busy VM are outvoted. */
const MATERIALIZE_ROUNDS = Math.max(ROUNDS, 5);
const MATERIALIZE_IMAGES = positiveInt('BENCH_MATERIALIZE_IMAGES', 2000);
const TARGET_OVERHEAD = 0.1;
const TARGET_RATE = 500;
const TRAINING_TIMEOUT_MS = 20 * 60_000;
const ARGS = { model: 'yolo11n.yaml', epochs: EPOCHS, imgsz: 160, batch: 16, workers: 0, plots: false };

const database = `vp_bench_train_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-train-'));
const { t, runTeardowns } = helperTap();

const server = new BenchApi();

/** The shapes ZIP unpacked into a local YOLO folder; its data.yaml. */
async function localDataset(env: Record<string, string>): Promise<string> {
  const dir = join(work, 'local');
  writeFileSync(join(work, 'shapes.zip'), await shapesDataset());
  await run(join(VENV, 'bin/python'), ['-m', 'zipfile', '-e', join(work, 'shapes.zip'), dir], { cwd: work, env });
  const yaml = join(dir, 'data.yaml');
  writeFileSync(yaml, `path: ${dir}\ntrain: images/train\nval: images/val\n${readFileSync(yaml, 'utf8')}`);
  return yaml;
}

/** Seconds from the start of a training to its first and last epoch's end, and to its end. */
interface Phases {
  firstEpoch: number;
  lastEpoch: number;
  total: number;
}

/** The platform's own command line on the local dataset; an epoch has ended when its results.csv row appears. */
async function standalone(
  env: Record<string, string>,
  config: string,
  data: string,
  owner: string,
  model: string,
): Promise<Phases> {
  const [command, ...args] = trainCommand({ ...ARGS, data }, { owner, project: 'bench', model, gpuCount: 0 });
  // ultralytics puts a relative project under its runs_dir, by task.
  const csv = join(config, `runs/detect/${owner}/bench/${model}/results.csv`);
  const started = performance.now();
  const epochEnds: number[] = [];
  // The agent empties CUDA_VISIBLE_DEVICES for a CPU job; so does this.
  const { seconds } = await run(command, args, {
    cwd: work,
    env: { ...env, CUDA_VISIBLE_DEVICES: '' },
    onTick: () => {
      const rows = existsSync(csv) ? readFileSync(csv, 'utf8').trim().split('\n').length - 1 : 0;
      while (epochEnds.length < rows) epochEnds.push((performance.now() - started) / 1000);
    },
  });
  if (epochEnds.length !== EPOCHS) throw new Error(`saw ${epochEnds.length} of ${EPOCHS} epochs in ${csv}`);
  return { total: seconds, firstEpoch: epochEnds[0], lastEpoch: epochEnds[EPOCHS - 1] };
}

/** Seconds after the job's creation, and what the run sent. */
interface Timeline {
  assigned: number;
  accepted: number;
  reporting: number;
  first_epoch: number;
  last_epoch: number;
  trainer_complete: number;
  job_complete: number;
  created_epoch: number;
  log_lines: number;
  console_chunks: number;
}

interface Training {
  // A platform job: its compute is never null.
  job: { status: string; error: { message: string } | null; compute: { jobStatus: string } } | null;
}
const ENDED = ['completed', 'failed', 'cancelled'];
const POLL_MS = 1000;

/**
 * One platform training. The figures come from the database's timestamps, so GET .../training is polled only
 * once a second: polling it faster costs the control plane CPU that the trainer, on the same cores, then lacks.
 */
async function platform(owner: string, model: string, controlPlanePid: number, agent: Spawned) {
  const { id: modelId } = await server.call<{ id: string }>('POST', '/api/models', { project: 'bench', model });
  const cpuBefore = cpuSeconds(controlPlanePid);
  const started = performance.now();
  const { jobId } = await server.call<{ jobId: string }>('POST', '/api/training/start', {
    modelId,
    trainArgs: { ...ARGS, data: `ul://${owner}/datasets/shapes` },
    gpuType: 'cpu',
  });
  let job: Training['job'] = null;
  try {
    for (;;) {
      ({ job } = await server.call<Training>('GET', `/api/models/${owner}/bench/${model}/training`));
      // The view says completed as soon as the trainer reports training_complete; the job ends after its process exits.
      if (job && ENDED.includes(job.compute.jobStatus ?? '')) break;
      if (performance.now() - started > TRAINING_TIMEOUT_MS)
        throw new Error(`the training is still ${job?.status} after ${TRAINING_TIMEOUT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    // A trainer left running would outlive its agent (it leads its own process group): stop it through the API.
    if (!job || !ENDED.includes(job.compute.jobStatus ?? ''))
      await call(server, 'DELETE', `/api/models/${owner}/bench/${model}/training`, { key: server.key }).catch(
        () => undefined,
      );
  }
  const controlPlaneCpu = cpuSeconds(controlPlanePid) - cpuBefore;
  const { lines } = await server.call<{ lines: Array<{ line: string }> }>('GET', `/api/jobs/${jobId}/logs?limit=5000`);
  if (job!.status !== 'completed')
    throw new Error(
      `the training ended ${job!.status}: ${job!.error?.message}\n${lines
        .slice(-40)
        .map((line) => line.line)
        .join('\n')}`,
    );
  // Seconds from the job's creation (the POST) to each step, all on the database's clock.
  const since = (column: string) => `extract(epoch from ${column} - j.created_at)::float8`;
  const {
    rows: [row],
  } = await adminQuery<Timeline>(
    `select ${since('j.started_at')} as assigned, ${since('j.accepted_at')} as accepted, ${since('r.created_at')} as reporting,
       ${since('(select min(at) from training_epochs e where e.run_id = r.id)')} as first_epoch, ${since('(select max(at) from training_epochs e where e.run_id = r.id)')} as last_epoch,
       ${since('r.completed_at')} as trainer_complete, ${since('j.finished_at')} as job_complete, extract(epoch from j.created_at)::float8 as created_epoch,
       j.log_lines, (select count(*)::int from training_console c where c.run_id = r.id) as console_chunks
     from jobs j join training_runs r on r.job_id = j.id where j.id = '${jobId}'`,
    database,
  );
  const timeline = row;
  // The agent logs (JSON lines) when the trainer's process has exited, on the same machine's clock.
  const ended = agent
    .output()
    .split('\n')
    .find((line) => line.includes('"msg":"job ended"') && line.includes(jobId));
  const agentSawExit = ended
    ? Date.parse((JSON.parse(ended) as { time: string }).time) / 1000 - timeline.created_epoch
    : NaN;
  // The trainer's own account of turning ul://… into a local dataset: the last frame of its converter's progress bar.
  const conversion =
    lines
      // oxlint-disable-next-line no-control-regex -- splits on the terminal's erase-line escape (ESC [K) that redraws a progress bar
      .flatMap((line) => line.line.split(/\r|\x1b\[K/))
      .filter((frame) => /Converting .*ndjson/.test(frame))
      .pop()
      ?.trim() ?? 'not found in the job log';
  return {
    ...timeline,
    controlPlaneCpu,
    agentSawExit,
    conversion,
    firstEpoch: timeline.first_epoch,
    lastEpoch: timeline.last_epoch,
    total: timeline.job_complete,
  };
}

/** ultralytics' converter on ul://owner/datasets/slug, timed in Python (export and NDJSON download apart, by wrapping them). */
const MATERIALIZE_PY = `
import asyncio, json, sys, time
from pathlib import Path
from ultralytics.utils import checks, downloads
from ultralytics.data.converter import convert_ndjson_to_yolo
phases = {}
def timed(name, fn):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0) + time.perf_counter() - started
    return wrapper
checks.resolve_platform_uri = timed("export", checks.resolve_platform_uri)
downloads.safe_download = timed("ndjson", downloads.safe_download)
started, cpu = time.perf_counter(), time.process_time()
data = asyncio.run(convert_ndjson_to_yolo(sys.argv[1], output_path=sys.argv[2]))
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
images = sum(1 for path in (Path(data).parent / "images").rglob("*") if path.is_file())
print(json.dumps({"seconds": seconds, "cpu": cpu, "images": images, **phases}))
`;

async function materialize(owner: string, env: Record<string, string>, controlPlanePid: number, output: string) {
  const cpuBefore = cpuSeconds(controlPlanePid);
  const { out } = await run(
    join(VENV, 'bin/python'),
    ['-c', MATERIALIZE_PY, `ul://${owner}/datasets/shapes-many`, output],
    {
      cwd: work,
      env: { ...env, ULTRALYTICS_API_KEY: server.key, ULTRALYTICS_PLATFORM_URL: server.url },
    },
  );
  const controlPlaneCpu = cpuSeconds(controlPlanePid) - cpuBefore;
  const result = JSON.parse(out.trim().split('\n').pop()!) as {
    seconds: number;
    cpu: number;
    images: number;
    export: number;
    ndjson: number;
  };
  // The ingest keeps one copy of identical pictures (the generator draws a few twice): the dataset's count is the truth.
  const { dataset } = await server.call<{ dataset: { imageCount: number } }>(
    'GET',
    `/api/datasets/${owner}/shapes-many`,
  );
  if (result.images !== dataset.imageCount)
    throw new Error(`materialized ${result.images} images of ${dataset.imageCount}`);
  return { ...result, controlPlaneCpu };
}

async function main(): Promise<void> {
  if (!existsSync(join(VENV, 'bin/yolo')))
    throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh`);
  const config = ultralyticsConfig(join(work, 'yolo-config'));
  const env = trainerEnv(config);
  // Loads torch and ultralytics once, so neither training pays for a cold page cache; gives the versions too.
  const versions = (
    await run(
      join(VENV, 'bin/python'),
      ['-c', 'import torch, ultralytics.models.yolo; print(ultralytics.__version__, torch.__version__)'],
      { cwd: work, env },
    )
  ).out
    .trim()
    .split('\n')
    .pop()!
    .split(' ');

  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const loadAtStart = loadavg()[0];
  const started = await startControlPlane('control-plane', {
    databaseName: database,
    dataDir,
    nodeArgs: SERVER_NODE_ARGS,
    env: { BILLING_ENABLED: 'false' },
  });
  server.url = started.base;
  server.key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const { username: owner } = await server.call<{ username: string }>('GET', '/api/account/summary');
  const world = { server } as unknown as World;
  process.stderr.write('ingesting the shapes dataset, connecting a worker agent…\n');
  await createShapesDataset(t, world, server.key, owner, 'shapes');
  await server.call('POST', '/api/projects', { project: 'bench', name: 'Bench' });
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
    (await server.call<Record<string, string | null>>('GET', '/api/training/gpu-availability?managed=true')).cpu ===
    null;
    tries++
  ) {
    if (tries > 300) throw new Error(`the agent did not connect:\n${agent.output().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  const data = await localDataset(env);
  const controlPlanePid = started.child.proc.pid!;
  const reportingEnv = { ...env, ULTRALYTICS_API_KEY: server.key, ULTRALYTICS_PLATFORM_URL: server.url };
  const runs = {
    standalone: [] as Phases[],
    reporting: [] as Phases[],
    platform: [] as Array<Awaited<ReturnType<typeof platform>>>,
  };
  let controlPlaneIdleCpu = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    // Each kind of run goes first in turn: this machine's speed drifts, and a first run may pay for warming up.
    const kinds = (['standalone', 'reporting', 'platform'] as const).map(
      (_, i, all) => all[(i + round - 1) % all.length],
    );
    for (const kind of kinds) {
      process.stderr.write(`round ${round}/${ROUNDS}: ${kind} training, ${EPOCHS} epochs…\n`);
      if (kind === 'platform') {
        // As on a host that never saw this dataset: the trainer would otherwise reuse the copy an earlier round made.
        rmSync(join(config, 'datasets'), { recursive: true, force: true });
        runs.platform.push(await platform(owner, `run-${round}`, controlPlanePid, agent));
        // The model's automatic ONNX export follows its training on this host: not part of the training timed here.
        await exportsSettled(database, `run-${round}`);
      } else if (kind === 'reporting') {
        // With the trainer's platform callbacks on (a user's own machine: webhooks, console capture, final upload),
        // still on the local folder: what the integration costs inside the trainer, without job or agent.
        runs.reporting.push(await standalone(reportingEnv, config, data, owner, `own-${round}`));
        // Its training_complete queued the model's automatic ONNX export on the bench's host: let it end first too.
        await exportsSettled(database, `own-${round}`);
      } else {
        const idle = cpuSeconds(controlPlanePid);
        runs.standalone.push(await standalone(env, config, data, 'standalone', `run-${round}`));
        controlPlaneIdleCpu += cpuSeconds(controlPlanePid) - idle;
      }
    }
  }

  process.stderr.write(`ingesting ${MATERIALIZE_IMAGES} shapes, materializing them…\n`);
  const val = Math.round(MATERIALIZE_IMAGES / 5);
  await createShapesDataset(t, world, server.key, owner, 'shapes-many', { train: MATERIALIZE_IMAGES - val, val });
  // Into a new folder each round, so nothing is reused locally; the appliance caches the export after the first.
  const materializations = [];
  for (let round = 1; round <= MATERIALIZE_ROUNDS; round++)
    materializations.push(await materialize(owner, env, controlPlanePid, join(work, `materialized-${round}`)));

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
  const s = (value: number) => `${value.toFixed(2)} s`;
  // Each round's overhead against the standalone run of the same round, then their median.
  const overheads = runs.platform.map((run, i) => (run.total - runs.standalone[i].total) / runs.standalone[i].total);
  const callbacks = runs.reporting.map((run, i) => (run.total - runs.standalone[i].total) / runs.standalone[i].total);
  // As the rounds' platform ÷ standalone, for the row's ratio and spread.
  const { ratio: overheadRatio, spread: overheadSpread } = ratioOfRounds(overheads.map((o) => 1 + o));
  const overhead = overheadRatio - 1;
  const percent = (values: number[]) => values.map((value) => `${(100 * value).toFixed(1)}%`).join(', ');
  // The platform run whose total is the median, for its timeline.
  const p = runs.platform.find((run) => run.total === median(runs.platform.map((r) => r.total)))!;
  console.log(
    `\nbench:train — ${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), load average ${loadAtStart.toFixed(2)} at start, node ${process.version}, ultralytics ${versions[0]}, torch ${versions[1]}`,
  );
  console.log(
    `training: ${Object.entries(ARGS)
      .map(([name, value]) => `${name}=${value}`)
      .join(' ')} device=cpu, shapes dataset 64 train / 16 val, 160 px; ${ROUNDS} rounds\n`,
  );
  console.log(
    `platform timeline of the median run (database clock, seconds after POST /api/training/start created the job):`,
  );
  console.log(`  job assigned to the host (started_at)                  ${s(p.assigned)}`);
  console.log(`  trainer spawned, accepted by the agent (accepted_at)   ${s(p.accepted)}`);
  console.log(`  training_started webhook received (run created)        ${s(p.reporting)}`);
  console.log(`  first epoch_end received (training_epochs.at)          ${s(p.first_epoch)}`);
  console.log(`  last epoch_end received                                ${s(p.last_epoch)}`);
  console.log(`  training_complete received (run/model completedAt)     ${s(p.trainer_complete)}`);
  console.log(`  the agent saw the trainer exit ("job ended")           ${s(p.agentSawExit)}`);
  console.log(`  job completed (finished_at)                            ${s(p.job_complete)}`);
  console.log(`  training_complete → job completed                      ${s(p.job_complete - p.trainer_complete)}`);
  console.log(
    `  trainer output: ${p.log_lines} job log lines, ${p.console_chunks} console_output chunks; control plane CPU ${s(p.controlPlaneCpu)} (during the ${ROUNDS} standalone runs: ${s(controlPlaneIdleCpu)})`,
  );
  console.log(`  the trainer's dataset conversion: ${p.conversion}`);
  console.log(`compared (medians of ${ROUNDS} rounds, seconds):`);
  console.log(
    '  standalone   `yolo train` alone, from process start to exit: local YOLO folder, no platform env, YOLO_OFFLINE=1; epoch ends = results.csv rows',
  );
  console.log(
    "  +reporting   the same with ULTRALYTICS_API_KEY and ULTRALYTICS_PLATFORM_URL set: the trainer's platform callbacks, no job, no agent",
  );
  console.log(
    '  platform     the job, from POST /api/training/start to job completed; epoch ends = epoch_end received; difference = platform − standalone',
  );
  const phases = (all: Phases[]) => [
    median(all.map((r) => r.firstEpoch)),
    median(all.map((r) => r.lastEpoch - r.firstEpoch)),
    median(all.map((r) => r.total - r.lastEpoch)),
    median(all.map((r) => r.total)),
  ];
  const columns = [phases(runs.standalone), phases(runs.reporting), phases(runs.platform)];
  const cell = (value: number) => value.toFixed(2).padStart(12);
  console.log(
    `  ${''.padEnd(28)}${['standalone', '+reporting', 'platform', 'difference'].map((name) => name.padStart(12)).join('')}`,
  );
  ['start → first epoch end', 'first → last epoch end', 'last epoch end → done', 'total'].forEach((label, i) =>
    console.log(
      `  ${label.padEnd(28)}${columns.map((column) => cell(column[i])).join('')}${cell(columns[2][i] - columns[0][i])}`,
    ),
  );
  console.log(
    `  totals by round: standalone ${runs.standalone.map((r) => s(r.total)).join(', ')}; +reporting ${runs.reporting.map((r) => s(r.total)).join(', ')}; platform ${runs.platform.map((r) => s(r.total)).join(', ')}`,
  );
  console.log(
    `  platform overhead on the total (median of the rounds' ${percent(overheads)}, ${spreadText(overheadSpread)}): ${(100 * overhead).toFixed(1)}% (target < ${TARGET_OVERHEAD * 100}%) ${overhead < TARGET_OVERHEAD ? 'PASS' : 'FAIL'}`,
  );
  console.log(
    `  of which the trainer's callbacks alone (+reporting vs standalone, by round: ${percent(callbacks)}): ${(100 * median(callbacks)).toFixed(1)}%`,
  );
  const rates = materializations.map((m) => m.images / m.seconds);
  // The median of the rounds and their spread, as a ratio's rounds are summed up.
  const { ratio: rate, spread: rateSpread } = ratioOfRounds(rates);
  console.log(
    `dataset materialization (ultralytics converter on ul://${owner}/datasets/shapes-many, ${materializations[0].images} images 160 px, export + NDJSON + images, ${MATERIALIZE_ROUNDS} rounds):`,
  );
  console.log(
    `  ${rate.toFixed(0)} images/s, median of ${rates.map((r) => r.toFixed(0)).join(', ')}, ${spreadText(rateSpread)} (target ≥ ${TARGET_RATE} images/s) ${rate >= TARGET_RATE ? 'PASS' : 'FAIL'}`,
  );
  for (const [i, m] of materializations.entries()) {
    console.log(
      `  round ${i + 1}: ${s(m.seconds)} = export ${s(m.export)}${i ? ' (cached)' : ' (cold)'} + NDJSON download ${s(m.ndjson)} + images ${s(m.seconds - m.export - m.ndjson)}; CPU: converter ${s(m.cpu)}, control plane ${s(m.controlPlaneCpu)}`,
    );
  }
  recordResult(
    'train',
    [
      {
        figure: `${EPOCHS}-epoch CPU training via the platform`,
        value: median(runs.platform.map((r) => r.total)),
        unit: 's',
        ceiling: median(runs.standalone.map((r) => r.total)),
        ratio: overheadRatio,
        ...(overheadSpread !== undefined && { spread: overheadSpread }),
        target: `overhead < ${TARGET_OVERHEAD * 100}%`,
        pass: overhead < TARGET_OVERHEAD,
      },
      {
        figure: `ul:// dataset materialization, ${materializations[0].images} images`,
        value: rate,
        unit: 'images/s',
        ...(rateSpread !== undefined && { spread: rateSpread }),
        target: `>= ${TARGET_RATE} images/s`,
        pass: rate >= TARGET_RATE,
      },
    ],
    {
      epochs: EPOCHS,
      rounds: ROUNDS,
      overheads,
      callbacks,
      runs,
      materializations,
      versions: { ultralytics: versions[0], torch: versions[1] },
    },
  );
}

await runBenchmark('bench:train', main, async () => {
  await runTeardowns();
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
