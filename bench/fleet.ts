/**
 * `npm run bench:fleet`: where one machine of control plane stops being enough (issue 39). Three control-plane
 * replicas (`node control-plane/src/main.ts`, each its own PORT and DATA_DIR, one shared SIGNING_SECRET) on one fresh
 * database `vp_bench_fleet_<pid>` of TEST_PG_URL; 500 simulated worker agents (bench/fleet-agents.ts: the real protocol
 * over WebSockets, in 5 processes) with 4 GPUs each, 2,000 GPUs of four types, spread over the replicas; then 10,000
 * host jobs of mixed shapes (CPU only, 1, 2 or 4 GPUs of one type, 2 of any type) queued in bulk while the fleet is
 * connected, each running a simulated 0.5–1.5 × BENCH_FLEET_JOB_SECONDS once assigned, until the queue has drained.
 *
 * Hosts join the real way: `hosts connect` (the HostService method vpctl calls, in this process: 500 vpctl processes
 * would take minutes) issues each an enrollment token, and each agent's enrollment is a POST /api/hosts/enroll to its
 * replica; the agents then connect with the worker keys they got. Jobs are queued in bulk, 1,000 to a transaction, each
 * row as enqueueJob makes a host job's (test/helpers/host-jobs.ts) with one NOTIFY per transaction (queueInBulk).
 *
 * Figures:
 *   - placement latency, p50 and p99: from the later of the job's queueing (its transaction's commit) and the moment
 *     the GPUs (or CPU slot) it got were free on its host (the agent's welcome, or its report of the job before) to
 *     the job.assign arriving at the agent; target p99 < 2 s. A job waiting for a free GPU is not the scheduler being
 *     slow, so that wait is left out; the whole wait (queued → assigned) is printed beside it.
 *   - scheduler decisions per second: assignments per second over the drain, and the most in one second;
 *   - PostgreSQL connections of each replica (pg_stat_activity, by the application_name each replica's PGAPPNAME
 *     sets), the most seen in a sample; target ≤ 20;
 *   - NOTIFY fan-out delay: one probe host per replica (a GPU type of its own, so only it can take the probe job)
 *     receives a probe job queued by this process (priority 1, ahead of the backlog), one at a time every 1.5 s while
 *     the fleet drains and a few times once idle: queued (commit) → job.assign at the probe's agent, which is the
 *     NOTIFY reaching that replica plus one dispatch there;
 *   - each replica's peak RSS (target < 1 GB), its CPU and its PostgreSQL backends' CPU over the drain.
 *
 * Also printed: the GPUs' busy share over the drain, the CPU the replicas and their backends spent per job, and the
 * CPU the machine spent on other work meanwhile (the figures move with it).
 *
 * Environment: BENCH_FLEET_AGENTS (500), BENCH_FLEET_JOBS (10000), BENCH_FLEET_REPLICAS (3), BENCH_FLEET_PROCESSES (5),
 * BENCH_FLEET_JOB_SECONDS (15: mean simulated run time), BENCH_FLEET_SEED (1), BENCH_FLEET_TIMEOUT_SECONDS (900),
 * BENCH_SERVER_NODE_ARGS (extra node flags for the replicas, e.g. `--cpu-prof --cpu-prof-dir=DIR`), BENCH_FLEET_DUMP
 * (a file for every job queued and every assignment received), TEST_PG_URL. Everything is stopped and dropped at the
 * end; exit status 1 when something broke (a job failed or ran twice, an agent lost its socket, the queue did not drain
 * in time); a FAIL verdict alone does not change it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EntityManager } from '@mikro-orm/postgresql';
import { seeded } from '../control-plane/src/embeddings/seeded-random.ts';
import { HostService } from '../control-plane/src/hosts/host.service.ts';
import { JobLifecycle } from '../control-plane/src/jobs/job-lifecycle.ts';
import { enqueueJob } from '../control-plane/src/jobs/job-queue.ts';
import { Job } from '../control-plane/src/jobs/job.entity.ts';
import { notifyJobQueued } from '../control-plane/src/jobs/job.store.ts';
import { initORM, type Orm } from '../control-plane/src/db/orm.ts';
import { HOST_COMMAND_JOB } from '../control-plane/src/scheduler/host-job-kinds.ts';
import type { Assignment, FleetCommand, FleetReply, SimHost } from './fleet-agents.ts';
import { FleetSampler, type SamplerSummary } from './fleet-sampler.ts';
import {
  ROOT,
  adminQuery,
  children,
  databaseUrl,
  positiveInt,
  recordResult,
  runBenchmark,
  startControlPlane,
  stopChild,
  type Child,
  type Figure,
  SERVER_NODE_ARGS,
} from './lib.ts';

const AGENTS = positiveInt('BENCH_FLEET_AGENTS', 500);
const JOBS = positiveInt('BENCH_FLEET_JOBS', 10_000);
const REPLICAS = positiveInt('BENCH_FLEET_REPLICAS', 3);
const PROCESSES = Math.min(positiveInt('BENCH_FLEET_PROCESSES', 5), AGENTS);
const JOB_SECONDS = positiveInt('BENCH_FLEET_JOB_SECONDS', 15);
const SEED = positiveInt('BENCH_FLEET_SEED', 1);
const TIMEOUT_MS = positiveInt('BENCH_FLEET_TIMEOUT_SECONDS', 900) * 1000;
/** Extra node flags for the replicas, e.g. `--cpu-prof --cpu-prof-dir=DIR` to profile them (as bench:api). */
const GPUS_PER_HOST = 4;
/** Jobs queued per transaction (one NOTIFY each). */
const QUEUE_BATCH = 1000;
/** Enrollments in flight at once. */
const ENROLL_CONCURRENCY = 8;
const PROBE_EVERY_MS = 1500;
const IDLE_PROBE_ROUNDS = 5;
const PROBE_SECONDS = 0.1;
const TARGET_PLACEMENT_P99_MS = 2000;
const TARGET_CONNECTIONS = 20;
const TARGET_RSS_BYTES = 2 ** 30;

const DATABASE = `vp_bench_fleet_${process.pid}`;
/** Each replica's PGAPPNAME is this and its number, so pg_stat_activity tells their connections apart. */
const APP_PREFIX = 'vp-fleet-replica-';
/** This process's own connections' application_name. */
const BENCH_APP = 'vp-bench-fleet';

/** The fleet's GPUs: one type per host, a quarter of the hosts each. */
const GPU_TYPES = [
  { typeId: 'h100-sxm', model: 'NVIDIA H100 80GB HBM3', memoryMiB: 81_559 },
  { typeId: 'a100-80gb-sxm', model: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81_920 },
  { typeId: 'l40s', model: 'NVIDIA L40S', memoryMiB: 46_068 },
  { typeId: 'rtx-4090', model: 'NVIDIA GeForce RTX 4090', memoryMiB: 24_564 },
] as const;

/** The job mix: share of the jobs, GPUs, and whether they name a GPU type (else any type). */
const SHAPES = [
  { share: 0.15, gpus: 0, typed: false, label: 'CPU only' },
  { share: 0.45, gpus: 1, typed: true, label: '1 GPU of a type' },
  { share: 0.2, gpus: 2, typed: true, label: '2 GPUs of a type' },
  { share: 0.1, gpus: 4, typed: true, label: '4 GPUs of a type' },
  { share: 0.1, gpus: 2, typed: false, label: '2 GPUs of any type' },
] as const;

interface Replica {
  index: number;
  base: string;
  pid: number;
}

interface QueuedJob {
  queuedAt: number;
  gpus: number;
  gpuType: string | null;
  seconds: number;
  probe?: { replica: number; idle: boolean };
}

// ---------------------------------------------------------------------------------------------
// Small helpers

const percentile = (sorted: number[], p: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const sortedOf = (values: number[]) => [...values].sort((a, b) => a - b);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => bytes / 2 ** 20;
const fmt = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : '-');

/** Runs `work` over `items` with at most `limit` in flight. */
async function inParallel<T>(items: T[], limit: number, work: (item: T, index: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let index = next++; index < items.length; index = next++) await work(items[index], index);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The agents' processes

interface AgentProcess {
  child: Child;
  send(command: FleetCommand): void;
  next<T extends FleetReply['type']>(type: T, timeoutMs: number): Promise<Extract<FleetReply, { type: T }>>;
}

function startAgentProcess(index: number): AgentProcess {
  const proc = spawn(process.execPath, ['bench/fleet-agents.ts'], {
    cwd: ROOT,
    env: process.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const child: Child = {
    name: `agents-${index}`,
    proc,
    tail: [],
    exited: new Promise((resolve) => proc.once('exit', () => resolve())),
  };
  children.push(child);
  const inbox: FleetReply[] = [];
  const waiting: Array<() => void> = [];
  proc.on('message', (message: FleetReply) => {
    inbox.push(message);
    waiting.splice(0).forEach((wake) => wake());
  });
  proc.once('exit', () => waiting.splice(0).forEach((wake) => wake()));
  return {
    child,
    send: (command) => proc.send(command),
    async next(type, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const at = inbox.findIndex((message) => message.type === type);
        if (at >= 0) return inbox.splice(at, 1)[0] as Extract<FleetReply, { type: typeof type }>;
        if (proc.exitCode !== null || proc.signalCode !== null)
          throw new Error(`${child.name} exited (${proc.signalCode ?? proc.exitCode}) before answering ${type}`);
        if (Date.now() > deadline) throw new Error(`${child.name} did not answer ${type} in time`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 500);
          waiting.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Arranging: replicas, hosts, jobs

async function startReplicas(work: string): Promise<Replica[]> {
  const secret = randomBytes(32).toString('hex');
  const start = async (index: number): Promise<Replica> => {
    const { child, base } = await startControlPlane(`replica-${index}`, {
      databaseName: DATABASE,
      dataDir: join(work, `replica-${index}`),
      env: { SIGNING_SECRET: secret, PGAPPNAME: `${APP_PREFIX}${index}` },
      nodeArgs: SERVER_NODE_ARGS,
    });
    return { index, base, pid: child.proc.pid! };
  };
  // The first migrates the database and creates the first user; the others find both done.
  const first = await start(0);
  const others = await Promise.all(Array.from({ length: REPLICAS - 1 }, (_, i) => start(i + 1)));
  return [first, ...others];
}

/** `hosts connect` for every host (as vpctl does), then each agent's enrollment over HTTP at its replica. */
async function enrollHosts(orm: Orm, replicas: Replica[]): Promise<SimHost[]> {
  const planned: Array<Omit<SimHost, 'key' | 'url'>> = [
    ...Array.from({ length: AGENTS }, (_, index) => {
      const gpu = GPU_TYPES[index % GPU_TYPES.length];
      return {
        index,
        replica: index % REPLICAS,
        gpuType: gpu.typeId,
        gpuModel: gpu.model,
        gpuMemoryMiB: gpu.memoryMiB,
        gpus: GPUS_PER_HOST,
      };
    }),
    // One probe host per replica, with a GPU type no other host has.
    ...replicas.map((replica) => ({
      index: AGENTS + replica.index,
      replica: replica.index,
      gpuType: probeType(replica.index),
      gpuModel: `Fleet probe ${replica.index}`,
      gpuMemoryMiB: 16_384,
      gpus: 1,
    })),
  ];
  const tokens: string[] = [];
  const lifecycle = new JobLifecycle();
  for (const host of planned) {
    const hosts = new HostService(orm.em.fork() as EntityManager, replicas[0].base, lifecycle);
    const name = host.index < AGENTS ? `gpu-${String(host.index).padStart(4, '0')}` : `probe-${host.replica}`;
    tokens.push((await hosts.connect(name)).enrollmentToken);
  }
  const enrolled: SimHost[] = [];
  await inParallel(planned, ENROLL_CONCURRENCY, async (host, index) => {
    const url = replicas[host.replica].base;
    const response = await fetch(`${url}/api/hosts/enroll`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: tokens[index], hostname: `fleet-${host.index}` }),
    });
    const body = (await response.json()) as { workerKey?: string; error?: string };
    if (!response.ok || !body.workerKey)
      throw new Error(`enrolling host ${host.index} answered ${response.status}: ${body.error ?? 'no key'}`);
    enrolled[index] = { ...host, key: body.workerKey, url };
  });
  return enrolled;
}

const PROBE_TYPE_PREFIX = 'fleet-probe-';
const probeType = (replica: number) => `${PROBE_TYPE_PREFIX}${replica}`;

interface PlannedJob {
  gpus: number;
  gpuType: string | null;
  seconds: number;
}

function planJobs(count: number): PlannedJob[] {
  const random = seeded(SEED);
  return Array.from({ length: count }, () => {
    let pick = random();
    const shape = SHAPES.find((candidate) => (pick -= candidate.share) < 0) ?? SHAPES[0];
    const gpuType = shape.typed ? GPU_TYPES[Math.floor(random() * GPU_TYPES.length)].typeId : null;
    const seconds = Math.round(JOB_SECONDS * (0.5 + random()) * 10) / 10;
    return { gpus: shape.gpus, gpuType, seconds };
  });
}

const commandOf = (job: PlannedJob) => ({
  spec: {
    command: ['python', 'work.py', '--seconds', String(job.seconds)],
    env: { FLEET_SECONDS: String(job.seconds) },
    workDir: 'jobs/fleet',
    gpus: { count: job.gpus },
  },
});

/**
 * Queues the fleet's jobs in bulk, QUEUE_BATCH to a transaction: each job's row as enqueueJob makes a host job's, all of
 * a batch in one flush, and one NOTIFY at its commit (enqueueJob's one flush and NOTIFY per job took 4 ms a job on this
 * machine: the queueing would have lasted longer than the drain). A job's queueing time is its transaction's commit.
 */
async function queueInBulk(
  orm: Orm,
  workspaceId: string,
  jobs: PlannedJob[],
  queued: Map<string, QueuedJob>,
): Promise<void> {
  for (let from = 0; from < jobs.length; from += QUEUE_BATCH) {
    const batch = jobs.slice(from, from + QUEUE_BATCH);
    const ids = await (orm.em.fork() as EntityManager).transactional(async (em) => {
      const made = batch.map((job) =>
        em.create(Job, {
          workspace: workspaceId,
          kind: HOST_COMMAND_JOB,
          subjectId: null,
          payload: commandOf(job),
          priority: 0,
          maxAttempts: 3,
          exclusive: false,
          placement: 'host',
          gpuType: job.gpus > 0 ? job.gpuType : null,
          gpuCount: job.gpus,
          memoryBytes: null,
          toolchain: null,
          restartable: false,
          region: null,
          service: null,
        }),
      );
      await em.flush();
      await notifyJobQueued(em, HOST_COMMAND_JOB);
      return made.map((job) => job.id);
    });
    const queuedAt = Date.now();
    batch.forEach((job, index) =>
      queued.set(ids[index], { queuedAt, gpus: job.gpus, gpuType: job.gpuType, seconds: job.seconds }),
    );
  }
}

/** Queues one probe job through enqueueJob, ahead of the backlog (priority 1): it measures the way to its replica, not the queue. */
async function queueProbe(
  orm: Orm,
  workspaceId: string,
  job: PlannedJob,
  queued: Map<string, QueuedJob>,
  probe: NonNullable<QueuedJob['probe']>,
): Promise<string> {
  const created = await (orm.em.fork() as EntityManager).transactional((em) =>
    enqueueJob(em, {
      kind: HOST_COMMAND_JOB,
      workspaceId,
      payload: commandOf(job),
      host: { gpuType: job.gpuType, gpuCount: job.gpus },
      priority: 1,
    }),
  );
  queued.set(created.id, { queuedAt: Date.now(), gpus: job.gpus, gpuType: job.gpuType, seconds: job.seconds, probe });
  return created.id;
}

/** The fleet's jobs by status (the probes left out). */
async function jobCounts(orm: Orm): Promise<Record<string, number>> {
  const rows = await (orm.em.fork() as EntityManager)
    .getConnection()
    .execute<Array<{ status: string; n: number }>>(
      `select status, count(*)::int as n from jobs where coalesce(gpu_type, '') not like '${PROBE_TYPE_PREFIX}%' group by status`,
    );
  return Object.fromEntries(rows.map((row) => [row.status, row.n]));
}

/** Queues a probe job for the replica's probe host and waits (up to `timeoutMs`) until it has left the queue. */
async function probe(
  orm: Orm,
  workspaceId: string,
  queued: Map<string, QueuedJob>,
  replica: number,
  idle: boolean,
  timeoutMs: number,
): Promise<void> {
  const jobId = await queueProbe(
    orm,
    workspaceId,
    { gpus: 1, gpuType: probeType(replica), seconds: PROBE_SECONDS },
    queued,
    { replica, idle },
  );
  const connection = (orm.em.fork() as EntityManager).getConnection();
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(100)) {
    const [row] = await connection.execute<Array<{ status: string }>>('select status from jobs where id = ?', [jobId]);
    if (row?.status !== 'queued') return;
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'vp-bench-fleet-'));
  const startedAt = performance.now();
  const phase = (what: string) =>
    process.stderr.write(`[${((performance.now() - startedAt) / 1000).toFixed(1)} s] ${what}\n`);
  let orm: Orm | undefined;
  let sampler: FleetSampler | undefined;
  try {
    await adminQuery(`drop database if exists ${DATABASE} with (force)`);
    await adminQuery(`create database ${DATABASE}`);
    phase(`starting ${REPLICAS} control-plane replicas on ${DATABASE}`);
    const replicas = await startReplicas(work);
    orm = await initORM(databaseUrl(DATABASE), { pool: { min: 0, max: 4 } });
    const [{ id: workspaceId }] = await adminQuery<{ id: string }>(
      `select w.id from workspaces w join users u on u.id = w.owner_id where w.kind = 'personal' order by w.created_at limit 1`,
      DATABASE,
    ).then((result) => result.rows);

    phase(`enrolling ${AGENTS} hosts (+${REPLICAS} probes) over HTTP`);
    const enrollStarted = performance.now();
    const hosts = await enrollHosts(orm, replicas);
    const enrollSeconds = (performance.now() - enrollStarted) / 1000;

    phase(`connecting them from ${PROCESSES} agent processes`);
    const processes = Array.from({ length: PROCESSES }, (_, index) => startAgentProcess(index));
    const connectStarted = performance.now();
    processes.forEach((agents, index) =>
      agents.send({ type: 'connect', hosts: hosts.filter((host) => host.index % PROCESSES === index) }),
    );
    await Promise.all(processes.map((agents) => agents.next('connected', 300_000)));
    const connectSeconds = (performance.now() - connectStarted) / 1000;
    phase(
      `${hosts.length} agents welcomed in ${connectSeconds.toFixed(1)} s (enrolment took ${enrollSeconds.toFixed(1)} s)`,
    );

    sampler = new FleetSampler(databaseUrl('postgres'), {
      database: DATABASE,
      appPrefix: APP_PREFIX,
      benchApp: BENCH_APP,
      replicaPids: replicas.map((replica) => replica.pid),
      agentPids: processes.map((agents) => agents.child.proc.pid!),
    });
    await sampler.start();
    await sleep(2000);
    sampler.mark();

    const queued = new Map<string, QueuedJob>();
    const planned = planJobs(JOBS);
    phase(`queueing ${JOBS.toLocaleString()} jobs`);
    const drainStarted = Date.now();
    await queueInBulk(orm, workspaceId, planned, queued);
    const queueSeconds = (Date.now() - drainStarted) / 1000;
    phase(`queued in ${queueSeconds.toFixed(1)} s; draining`);

    // Probes while it drains, one replica after the other, one at a time (a slow one is not piled on).
    let draining = true;
    const probing = (async () => {
      for (let round = 0; draining; round++) {
        await probe(orm!, workspaceId, queued, round % REPLICAS, false, TIMEOUT_MS);
        await sleep(PROBE_EVERY_MS);
      }
    })();

    const deadline = Date.now() + TIMEOUT_MS;
    let lastReport = 0;
    let timedOut = false;
    for (;;) {
      const counts = await jobCounts(orm);
      const open = (counts.queued ?? 0) + (counts.running ?? 0);
      if (Date.now() - lastReport >= 5000) {
        lastReport = Date.now();
        phase(`queued ${counts.queued ?? 0}, running ${counts.running ?? 0}, completed ${counts.completed ?? 0}`);
      }
      if (open === 0) break;
      if (Date.now() > deadline) {
        phase(`the queue did not drain within ${TIMEOUT_MS / 1000} s: figures of what was done`);
        timedOut = true;
        break;
      }
      await sleep(250);
    }
    const drainSeconds = (Date.now() - drainStarted) / 1000;
    draining = false;
    await probing;
    const cpu = await sampler.stop();
    sampler = undefined;

    if (!timedOut) {
      phase('probing the idle fleet');
      for (let round = 0; round < IDLE_PROBE_ROUNDS; round++)
        for (let replica = 0; replica < REPLICAS; replica++) {
          await probe(orm, workspaceId, queued, replica, true, 30_000);
          await sleep(300);
        }
      await sleep(2 * PROBE_SECONDS * 1000 + 500);
    }
    const final = await jobCounts(orm);

    const reports = await Promise.all(
      processes.map(async (agents) => {
        agents.send({ type: 'report' });
        return agents.next('report', 60_000);
      }),
    );
    processes.forEach((agents) => agents.send({ type: 'stop' }));
    await Promise.all(processes.map((agents) => agents.child.exited));

    report({
      replicas,
      queued,
      assignments: reports.flatMap((r) => r.assignments),
      reconnects: reports.reduce((sum, r) => sum + r.reconnects, 0),
      agentErrors: reports.flatMap((r) => r.errors),
      final,
      cpu,
      drainStarted,
      timedOut,
      timings: { enrollSeconds, connectSeconds, queueSeconds, drainSeconds },
    });
  } finally {
    await sampler?.stop().catch(() => undefined);
    await orm?.close();
    rmSync(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Figures

function report(run: {
  replicas: Replica[];
  queued: Map<string, QueuedJob>;
  assignments: Assignment[];
  reconnects: number;
  agentErrors: string[];
  final: Record<string, number>;
  cpu: SamplerSummary;
  /** Epoch ms the first batch of jobs began to be queued. */
  drainStarted: number;
  /** The queue did not drain in time: the figures are of what was done. */
  timedOut: boolean;
  timings: { enrollSeconds: number; connectSeconds: number; queueSeconds: number; drainSeconds: number };
}): void {
  const { replicas, queued, assignments, cpu, timings } = run;
  // Every job as queued and every assignment as received, for a closer look (BENCH_FLEET_DUMP=file.json).
  if (process.env.BENCH_FLEET_DUMP)
    writeFileSync(
      process.env.BENCH_FLEET_DUMP,
      JSON.stringify({ drainStarted: run.drainStarted, queued: [...queued], assignments }),
    );
  const byJob = new Map<string, Assignment[]>();
  for (const assignment of assignments)
    byJob.set(assignment.jobId, [...(byJob.get(assignment.jobId) ?? []), assignment]);
  const assignedTwice = [...byJob.values()].filter((list) => list.length > 1).length;

  const fleetJobs = [...queued].filter(([, job]) => !job.probe);
  const placement: number[] = [];
  const wait: number[] = [];
  const placementByShape = new Map<string, number[]>();
  for (const [jobId, job] of fleetJobs) {
    const first = byJob.get(jobId)?.[0];
    if (!first) continue;
    const ms = first.at - Math.max(job.queuedAt, first.freeSince);
    placement.push(ms);
    wait.push(first.at - job.queuedAt);
    const shape = `${job.gpus} ${job.gpus === 0 ? 'CPU' : (job.gpuType ?? 'any')}`;
    placementByShape.set(shape, [...(placementByShape.get(shape) ?? []), ms]);
  }
  const placementSorted = sortedOf(placement);
  const waitSorted = sortedOf(wait);
  const placementP50 = percentile(placementSorted, 50);
  // How busy the GPUs were from the first job queued to the last one ended: the jobs' GPU-seconds over the fleet's.
  const gpuSeconds = fleetJobs.reduce((sum, [, job]) => sum + job.gpus * job.seconds, 0);
  const utilisation = gpuSeconds / (AGENTS * GPUS_PER_HOST * timings.drainSeconds);
  const placementP99 = percentile(placementSorted, 99);

  // Decisions: the fleet's assignments, per second of the drain and in its busiest second.
  const fleetAssignments = fleetJobs.flatMap(([jobId]) => byJob.get(jobId) ?? []);
  const times = sortedOf(fleetAssignments.map((assignment) => assignment.at));
  const perSecond = new Map<number, number>();
  for (const at of times) perSecond.set(Math.floor(at / 1000), (perSecond.get(Math.floor(at / 1000)) ?? 0) + 1);
  const span = times.length > 1 ? (times.at(-1)! - times[0]) / 1000 : Number.NaN;
  const decisionsPerSecond = times.length / span;
  const peakDecisions = Math.max(0, ...perSecond.values());
  // The first wave: the jobs that went to GPUs and CPU slots idle since the agents' welcome, until the idle fleet was full.
  const firstWave = fleetAssignments.filter((assignment) => assignment.freeSince < run.drainStarted);
  const firstWaveSeconds = firstWave.length
    ? (Math.max(...firstWave.map((assignment) => assignment.at)) - run.drainStarted) / 1000
    : Number.NaN;

  const probes = (idle: boolean) =>
    replicas.map((replica) =>
      sortedOf(
        [...queued]
          .filter(([, job]) => job.probe?.replica === replica.index && job.probe.idle === idle)
          .flatMap(([jobId, job]) => {
            const first = byJob.get(jobId)?.[0];
            return first ? [first.at - job.queuedAt] : [];
          }),
      ),
    );
  const busyProbes = probes(false);
  const idleProbes = probes(true);
  const allBusyProbes = sortedOf(busyProbes.flat());
  const allIdleProbes = sortedOf(idleProbes.flat());

  // What each job cost the control plane and its database, whatever else the machine did meanwhile.
  const controlPlaneCores = cpu.replicas.reduce((sum, replica) => sum + replica.cpuCores + replica.backendCpuCores, 0);
  const cpuMsPerJob = (1000 * controlPlaneCores * cpu.seconds) / Math.max(1, fleetAssignments.length);
  const maxConnections = Math.max(...cpu.replicas.map((replica) => replica.maxConnections));
  const maxRss = Math.max(...cpu.replicas.map((replica) => replica.maxRssBytes));

  console.log();
  console.log(
    `${AGENTS} agents (${(AGENTS * GPUS_PER_HOST).toLocaleString()} GPUs) in ${PROCESSES} processes, ${REPLICAS} replicas, ` +
      `${JOBS.toLocaleString()} jobs of ${JOB_SECONDS} s on average, ${cpus().length} CPUs, Node ${process.versions.node}`,
  );
  console.log(
    `enrolment ${fmt(timings.enrollSeconds, 1)} s, agents welcomed ${fmt(timings.connectSeconds, 1)} s, ` +
      `jobs queued ${fmt(timings.queueSeconds, 1)} s, queue drained ${fmt(timings.drainSeconds, 1)} s`,
  );
  console.log(
    `jobs: ${Object.entries(run.final)
      .map(([status, n]) => `${n} ${status}`)
      .join(', ')}; assigned twice ${assignedTwice}; agent reconnects ${run.reconnects}`,
  );
  console.log();
  console.log(
    `placement latency (max(queued, slot free) → job.assign at the agent)  p50 ${fmt(placementP50)} ms  p90 ${fmt(percentile(placementSorted, 90))} ms  p99 ${fmt(placementP99)} ms  max ${fmt(placementSorted.at(-1) ?? Number.NaN)} ms  (target p99 < ${TARGET_PLACEMENT_P99_MS} ms)`,
  );
  console.log(
    `queued → assigned, waiting for GPUs included                          p50 ${fmt(percentile(waitSorted, 50))} ms  p99 ${fmt(percentile(waitSorted, 99))} ms`,
  );
  console.log(
    `scheduler decisions  ${fmt(decisionsPerSecond, 1)}/s over the drain, ${peakDecisions} in the busiest second; ` +
      `first wave ${firstWave.length} jobs placed in ${fmt(firstWaveSeconds, 1)} s; ` +
      `GPUs busy ${fmt(100 * utilisation, 1)}% of the drain`,
  );
  console.log(
    `NOTIFY fan-out (probe queued → job.assign at the probe host)  while draining p50 ${fmt(percentile(allBusyProbes, 50))} ms max ${fmt(allBusyProbes.at(-1) ?? Number.NaN)} ms; idle p50 ${fmt(percentile(allIdleProbes, 50))} ms max ${fmt(allIdleProbes.at(-1) ?? Number.NaN)} ms`,
  );
  console.log();
  console.log(
    "replica  PG connections (max, busy)  peak RSS MiB  CPU cores  its backends' CPU cores  probes draining p50/max ms  idle p50 ms",
  );
  cpu.replicas.forEach((replica, index) =>
    console.log(
      `${String(index).padEnd(9)}${`${replica.maxConnections}, ${replica.maxBusyConnections}`.padStart(26)}${fmt(mib(replica.maxRssBytes)).padStart(14)}` +
        `${fmt(replica.cpuCores, 2).padStart(11)}${fmt(replica.backendCpuCores, 2).padStart(24)}` +
        `${`${fmt(percentile(busyProbes[index], 50))}/${fmt(busyProbes[index].at(-1) ?? Number.NaN)}`.padStart(27)}${fmt(percentile(idleProbes[index], 50)).padStart(13)}`,
    ),
  );
  console.log(
    `agent processes' CPU cores: ${cpu.agentCpuCores.map((cores) => fmt(cores, 2)).join(', ')}; this bench ${fmt(cpu.benchCpuCores, 2)}; ` +
      `the machine's busy cores: ${fmt(cpu.machineBusyCores, 2)} of ${cpus().length}, ${fmt(cpu.otherCpuCores, 2)} of them other work (over ${fmt(cpu.seconds, 1)} s)`,
  );
  console.log(
    `the replicas and their backends used ${fmt(controlPlaneCores, 2)} cores: ${fmt(cpuMsPerJob, 1)} ms of CPU per job (assignment, its reports, the heartbeats meanwhile)`,
  );
  if (run.agentErrors.length) console.log(`agents noted: ${run.agentErrors.slice(0, 10).join('; ')}`);

  const figures: Figure[] = [
    {
      figure: `placement latency p50, ${AGENTS} agents`,
      value: placementP50,
      unit: 'ms',
    },
    {
      figure: `placement latency p99, ${AGENTS} agents`,
      value: placementP99,
      unit: 'ms',
      target: `< ${TARGET_PLACEMENT_P99_MS} ms`,
      pass: placementP99 < TARGET_PLACEMENT_P99_MS,
    },
    { figure: 'scheduler decisions per second, over the drain', value: decisionsPerSecond, unit: '/s' },
    { figure: 'scheduler decisions in the busiest second', value: peakDecisions, unit: '/s' },
    { figure: 'GPUs busy while the queue drained', value: 100 * utilisation, unit: '%' },
    {
      figure: `PostgreSQL connections of the busiest of ${REPLICAS} replicas`,
      value: maxConnections,
      unit: 'conns',
      target: `<= ${TARGET_CONNECTIONS}`,
      pass: maxConnections <= TARGET_CONNECTIONS,
    },
    { figure: 'NOTIFY fan-out delay while draining, p50', value: percentile(allBusyProbes, 50), unit: 'ms' },
    { figure: 'NOTIFY fan-out delay while draining, max', value: allBusyProbes.at(-1) ?? Number.NaN, unit: 'ms' },
    { figure: 'NOTIFY fan-out delay idle, p50', value: percentile(allIdleProbes, 50), unit: 'ms' },
    {
      figure: 'peak RSS of the largest replica',
      value: mib(maxRss),
      unit: 'MiB',
      target: `< ${mib(TARGET_RSS_BYTES)} MiB`,
      pass: maxRss < TARGET_RSS_BYTES,
    },
    { figure: 'replicas and their PostgreSQL backends, CPU per job', value: cpuMsPerJob, unit: 'ms' },
    {
      figure: 'CPU of the busiest replica over the drain',
      value: Math.max(...cpu.replicas.map((replica) => replica.cpuCores)),
      unit: 'cores',
    },
  ];
  recordResult('fleet', figures, {
    agents: AGENTS,
    gpus: AGENTS * GPUS_PER_HOST,
    jobs: JOBS,
    replicas: REPLICAS,
    processes: PROCESSES,
    jobSeconds: JOB_SECONDS,
    seed: SEED,
    shapes: SHAPES,
    timings,
    final: run.final,
    assignedTwice,
    reconnects: run.reconnects,
    agentErrors: run.agentErrors,
    placementMs: {
      p50: placementP50,
      p90: percentile(placementSorted, 90),
      p99: placementP99,
      max: placementSorted.at(-1),
    },
    placementMsByShape: Object.fromEntries(
      [...placementByShape].map(([shape, values]) => {
        const sorted = sortedOf(values);
        return [shape, { jobs: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) }];
      }),
    ),
    waitMs: { p50: percentile(waitSorted, 50), p99: percentile(waitSorted, 99) },
    firstWave: { jobs: firstWave.length, seconds: firstWaveSeconds },
    decisionsPerSecond: Object.fromEntries(
      [...perSecond].map(([second, n]) => [String(second - Math.floor((times[0] ?? 0) / 1000)), n]),
    ),
    probes: { draining: busyProbes, idle: idleProbes },
    replicaFigures: cpu,
  });
  const broken = [
    run.timedOut ? `the queue did not drain within ${TIMEOUT_MS / 1000} s` : '',
    run.final.failed ? `${run.final.failed} jobs failed` : '',
    run.final.cancelled ? `${run.final.cancelled} jobs were cancelled` : '',
    assignedTwice ? `${assignedTwice} jobs were assigned twice` : '',
    run.reconnects ? `agents reconnected ${run.reconnects} times` : '',
    !run.timedOut && placement.length < fleetJobs.length
      ? `${fleetJobs.length - placement.length} jobs never reached an agent`
      : '',
  ].filter(Boolean);
  if (broken.length) {
    console.log(`BROKEN: ${broken.join('; ')}`);
    process.exitCode = 1;
  }
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`${signal}: stopping the fleet and the replicas, dropping ${DATABASE}\n`);
    void Promise.all(children.map(stopChild))
      .then(() => adminQuery(`drop database if exists ${DATABASE} with (force)`))
      .catch(() => undefined)
      .finally(() => process.exit(130));
  });
}

// Every connection this process opens says so in pg_stat_activity (the replicas set their own).
process.env.PGAPPNAME = BENCH_APP;
await runBenchmark('bench:fleet', main, () =>
  adminQuery(`drop database if exists ${DATABASE} with (force)`).catch((error: unknown) =>
    console.error(`could not drop ${DATABASE}: ${error instanceof Error ? error.message : String(error)}`),
  ),
);
