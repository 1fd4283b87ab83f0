// Shared by the benchmarks: child processes that are always stopped, free ports, the benchmark database.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { RATE_CATEGORIES } from '@vp/config';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 15_000;
/** Rate limits per category and window far above anything one run can send, and within PostgreSQL's integer. */
export const UNTHROTTLED_ENV = Object.fromEntries(
  RATE_CATEGORIES.map((category) => [`RATE_LIMIT_${category.toUpperCase()}`, '1000000000']),
);

/** Extra node flags for the benchmarked control planes (e.g. `--cpu-prof --cpu-prof-dir=DIR`). */
export const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

export function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

export interface Child {
  name: string;
  proc: ChildProcess;
  /** Last lines of stdout and stderr, for error messages. */
  tail: string[];
  exited: Promise<void>;
}

export const children: Child[] = [];

/** Starts `node <script>` and resolves with the first stdout match of `ready` (group 1). */
export async function startChild(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
): Promise<{ child: Child; match: string }> {
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const child: Child = {
    name,
    proc,
    tail: [],
    exited: new Promise((resolve) => proc.once('exit', () => resolve())),
  };
  children.push(child);
  return new Promise((resolve, reject) => {
    let started = false;
    const fail = (reason: string) => {
      if (started) return;
      started = true;
      clearTimeout(timer);
      reject(
        new Error(`${name} ${reason}${child.tail.length ? `; its last output:\n  ${child.tail.join('\n  ')}` : ''}`),
      );
    };
    const timer = setTimeout(() => fail(`printed no ready line within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS);
    const onLine = (line: string) => {
      if (!line) return;
      child.tail.push(line);
      if (child.tail.length > 30) child.tail.shift();
      const match = started ? null : ready.exec(line);
      if (match) {
        started = true;
        clearTimeout(timer);
        resolve({ child, match: match[1] });
      } else if (started) {
        process.stderr.write(`[${name}] ${line}\n`);
      }
    };
    for (const stream of [proc.stdout!, proc.stderr!]) {
      let buffered = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        buffered += chunk;
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        lines.forEach(onLine);
      });
    }
    proc.once('error', (error) => fail(`could not start: ${error.message}`));
    proc.once('exit', (code, signal) => fail(`exited before it was ready (${signal ?? `code ${code}`})`));
  });
}

export async function stopChild(child: Child): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await child.exited;
  clearTimeout(timer);
}

// A last resort if a benchmark dies without stopping its children.
process.once('exit', () => {
  for (const child of children)
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
});

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** One statement on the benchmark server, in its default database or in `database`. */
export async function adminQuery<Row extends pg.QueryResultRow = Record<string, unknown>>(
  sql: string,
  database?: string,
): Promise<pg.QueryResult<Row>> {
  const client = new pg.Client({ connectionString: database ? databaseUrl(database) : PG_URL });
  await client.connect();
  try {
    return await client.query<Row>(sql);
  } finally {
    await client.end();
  }
}

export function databaseUrl(name: string): string {
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A real control plane on its own database and data dir, rate limits out of the way; resolves with its base URL. */
export async function startControlPlane(
  label: string,
  options: { databaseName: string; dataDir: string; env?: Record<string, string>; nodeArgs?: string[] },
): Promise<{ child: Child; base: string }> {
  const port = await freePort();
  const { child, match } = await startChild(
    label,
    // As `npm start` runs it (README, Memory).
    ['--max-semi-space-size=4', ...(options.nodeArgs ?? []), 'control-plane/src/main.ts'],
    {
      ...process.env,
      ...UNTHROTTLED_ENV,
      DATABASE_URL: databaseUrl(options.databaseName),
      DATA_DIR: options.dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'warn',
      // As `npm start` and the container image run it (see README, Memory).
      MALLOC_ARENA_MAX: '2',
      MALLOC_MMAP_THRESHOLD_: '131072',
      NODE_COMPILE_CACHE: join(ROOT, '.cache', 'node-compile-cache'),
      ...options.env,
    },
    /^Vision Platform API: (\S+)\/api\b/,
  );
  return { child, base: match };
}

/** Resident memory of a process now, from /proc. */
export function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) * 1024 : 0;
}

/** Resident memory of a process and of every process under it (the control plane's inference workers), now, from /proc. */
export function treeRssBytes(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name in parentheses may hold spaces: the parent's pid is the second field after it.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const queue = [pid]; queue.length > 0;) {
    const next = queue.pop()!;
    try {
      total += rssBytes(next);
    } catch {
      // gone meanwhile
    }
    queue.push(...(children.get(next) ?? []));
  }
  return total;
}

/**
 * Streams the file to the signed URL with exactly the returned headers, from curl: a separate, lean client,
 * so the figure is the control plane's and not a Node client's sharing its CPU.
 */
export function putFile(url: string, headers: Record<string, string>, path: string): Promise<void> {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  return new Promise((resolve, reject) => {
    const curl = spawn(
      'curl',
      ['-sS', '--fail-with-body', '-H', 'Expect:', ...headerArgs, '-T', path, '-o', '/dev/null', url],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    curl.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    curl.once('error', (error) => reject(new Error(`curl could not start (${error.message}); install curl`)));
    curl.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`curl PUT failed (${code}): ${stderr.trim()}`)),
    );
  });
}

/** One measured figure against its target: a row of the table `npm run bench` prints. */
export interface Figure {
  figure: string;
  value: number;
  unit: string;
  /** The same quantity for the ceiling, measured in the same run. */
  ceiling?: number;
  /** value ÷ ceiling (or, where a benchmark says so, the median of its rounds' ratios). */
  ratio?: number;
  /** In words, e.g. `ratio >= 20%`; absent for a figure shown for information. */
  target?: string;
  pass?: boolean;
  /**
   * How much the figure (its ratio, where it has one) moved between the benchmark's own rounds, (max − min) ÷ median;
   * absent when it ran one round. The history (bench/history.ts) marks a row worse only beyond it.
   */
  spread?: number;
}

/** The middle value (the lower middle of an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * A ratio measured in alternated rounds (ceiling, appliance, ceiling, …): the median of the rounds' ratios, so one
 * noisy round cannot flip a verdict, and their spread, (max − min) ÷ median (absent for one round), for `Figure.spread`.
 */
export function ratioOfRounds(ratios: number[]): { ratio: number; spread?: number } {
  const ratio = median(ratios);
  return ratios.length > 1 ? { ratio, spread: (Math.max(...ratios) - Math.min(...ratios)) / ratio } : { ratio };
}

/** A spread as printed beside a ratio. */
export const spreadText = (spread: number | undefined) =>
  spread === undefined ? 'one round' : `spread ${(100 * spread).toFixed(0)}%`;

/** What a benchmark run leaves: its figures and whatever else it measured. */
export interface BenchResult {
  benchmark: string;
  timestamp: string;
  environment: { node: string; cpus: number; cpuModel?: string; memoryBytes: number };
  figures: Figure[];
  details: Record<string, unknown>;
}

/**
 * Writes a benchmark's figures as JSON to BENCH_RESULT_FILE (set by `npm run bench`), else to
 * bench/results/<benchmark>-<timestamp>.json; returns the path.
 */
export function recordResult(benchmark: string, figures: Figure[], details: Record<string, unknown> = {}): string {
  const timestamp = new Date().toISOString();
  const result: BenchResult = {
    benchmark,
    timestamp,
    environment: {
      node: process.versions.node,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      memoryBytes: totalmem(),
    },
    figures,
    details,
  };
  const file =
    process.env.BENCH_RESULT_FILE ||
    join(ROOT, 'bench', 'results', `${benchmark}-${timestamp.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nfigures written to ${file}`);
  return file;
}

/**
 * Runs a benchmark's main: a failure is printed and sets exit status 1; child processes are always
 * stopped and `cleanup` (dropping databases, removing folders) always runs.
 */
export async function runBenchmark(
  name: string,
  main: () => Promise<void>,
  cleanup: () => Promise<unknown> | void = () => undefined,
): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  } finally {
    for (const child of children) await stopChild(child);
    await cleanup();
  }
}
