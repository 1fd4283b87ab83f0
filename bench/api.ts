/**
 * `npm run bench:api`: the authenticated `GET /api/account/summary` of the real control plane on
 * PostgreSQL against a bare Koa app answering a constant JSON body (the ceiling).
 *
 * Both servers run as child processes; autocannon drives them from this process. The control plane
 * gets a fresh database `vp_bench_<pid>` on TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * a temporary DATA_DIR and rate limits high enough not to throttle the run; its first start creates
 * the admin key this benchmark uses. Everything is stopped and dropped at the end, also on error.
 *
 * Environment: BENCH_SECONDS (10), BENCH_CONNECTIONS (32), BENCH_WARMUP_SECONDS (2), TEST_PG_URL,
 * BENCH_SERVER_NODE_ARGS (extra node flags for the control plane, e.g. `--cpu-prof --cpu-prof-dir=DIR`).
 * Targets (issue 2): authenticated ≥ 20% of the ceiling's requests/s and authenticated p99 < 20 ms.
 * Exit status 1 when a run had non-2xx responses, errors or timeouts, or anything failed; the
 * PASS/FAIL verdict itself does not change the exit status.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { RATE_CATEGORIES } from '@vp/config';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SECONDS = positiveInt('BENCH_SECONDS', 10);
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 32);
const WARMUP_SECONDS = positiveInt('BENCH_WARMUP_SECONDS', 2);
/** Extra node flags for the control plane only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it. */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const TARGET_RATIO = 0.2;
const TARGET_P99_MS = 20;
/** Per category and window; far above anything one run can send, and within PostgreSQL's integer. */
const UNTHROTTLED = '1000000000';
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 15_000;

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Child processes

interface Child {
  name: string;
  proc: ChildProcess;
  /** Last lines of stdout and stderr, for error messages. */
  tail: string[];
  exited: Promise<void>;
}

const children: Child[] = [];

/** Starts `node <script>` and resolves with the first stdout match of `ready` (group 1). */
async function startChild(
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
      reject(new Error(`${name} ${reason}${child.tail.length ? `; its last output:\n  ${child.tail.join('\n  ')}` : ''}`));
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

async function stopChild(child: Child): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill('SIGTERM');
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await child.exited;
  clearTimeout(timer);
}

// A last resort if this process dies without running the cleanup below.
process.once('exit', () => {
  for (const child of children) if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Database

async function adminQuery(sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrl(name: string): string {
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Figures {
  target: string;
  url: string;
  requestsPerSecond: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  totalRequests: number;
  durationSeconds: number;
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
}

async function measure(target: string, url: string, headers: Record<string, string>): Promise<Figures> {
  process.stderr.write(`${target}: warming up ${WARMUP_SECONDS} s, then ${SECONDS} s with ${CONNECTIONS} connections\n`);
  await autocannon({ url, headers, connections: CONNECTIONS, duration: WARMUP_SECONDS });
  const r: Result = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS, title: target });
  return {
    target,
    url,
    requestsPerSecond: r.requests.average,
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    totalRequests: r.requests.total,
    durationSeconds: r.duration,
    '2xx': r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, stat]) => [code, stat.count])),
  };
}

async function expectOk(url: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(url, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return Buffer.byteLength(text);
}

function report(ceiling: Figures, authenticated: Figures): { ratio: number; ratioPass: boolean; p99Pass: boolean } {
  const ratio = authenticated.requestsPerSecond / ceiling.requestsPerSecond;
  const ratioPass = ratio >= TARGET_RATIO;
  const p99Pass = authenticated.p99Ms < TARGET_P99_MS;
  const columns = ['', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx', 'errors'];
  const widths = [34, 10, 8, 8, 10, 9, 8];
  const row = (cells: Array<string | number>) =>
    cells.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('');
  const figures = (f: Figures) => [
    f.target,
    f.requestsPerSecond.toFixed(0),
    f.p50Ms,
    f.p99Ms,
    f.totalRequests,
    f.non2xx,
    f.errors + f.timeouts,
  ];
  const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');
  console.log();
  console.log(`${CONNECTIONS} connections, ${SECONDS} s each (after ${WARMUP_SECONDS} s warm-up), ${cpus().length} CPUs, Node ${process.versions.node}`);
  console.log(row(columns));
  console.log(row(figures(ceiling)));
  console.log(row(figures(authenticated)));
  console.log();
  console.log(`ratio authenticated/ceiling  ${(ratio * 100).toFixed(1)}%  (target >= ${TARGET_RATIO * 100}%)  ${verdict(ratioPass)}`);
  console.log(`authenticated p99            ${authenticated.p99Ms} ms  (target < ${TARGET_P99_MS} ms)  ${verdict(p99Pass)}`);
  for (const f of [ceiling, authenticated]) {
    if (f.non2xx || f.errors || f.timeouts) {
      console.log(`WARNING ${f.target}: ${f.non2xx} non-2xx (${JSON.stringify(f.statusCodes)}), ${f.errors} errors, ${f.timeouts} timeouts`);
    }
  }
  return { ratio, ratioPass, p99Pass };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dbName = `vp_bench_${process.pid}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-bench-'));
  let dbCreated = false;
  try {
    await adminQuery(`drop database if exists ${dbName} with (force)`);
    await adminQuery(`create database ${dbName}`);
    dbCreated = true;
    const pgVersion = String((await adminQuery('show server_version')).rows[0].server_version);

    const port = await freePort();
    const rateLimits = Object.fromEntries(RATE_CATEGORIES.map((category) => [`RATE_LIMIT_${category.toUpperCase()}`, UNTHROTTLED]));
    const { match: apiBase } = await startChild(
      'control-plane',
      [...SERVER_NODE_ARGS, 'control-plane/src/main.ts'],
      {
        ...process.env,
        DATABASE_URL: databaseUrl(dbName),
        DATA_DIR: dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        LOG_LEVEL: 'warn',
        ...rateLimits,
      },
      /^Vision Platform API: (\S+)\/api\b/,
    );
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    const { match: bareBase } = await startChild('bare-koa', ['bench/bare-koa.ts'], { ...process.env, PORT: '0', HOST: '127.0.0.1' }, /^bare koa listening on (\S+)/);

    const summaryUrl = `${apiBase}/api/account/summary`;
    const auth = { authorization: `Bearer ${key}` };
    const bareBytes = await expectOk(bareBase, {});
    const summaryBytes = await expectOk(summaryUrl, auth);

    const ceiling = await measure('bare Koa (ceiling)', bareBase, {});
    const authenticated = await measure('GET /api/account/summary (key)', summaryUrl, auth);
    const { ratio, ratioPass, p99Pass } = report(ceiling, authenticated);

    const results = {
      timestamp: new Date().toISOString(),
      connections: CONNECTIONS,
      durationSeconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      environment: {
        node: process.versions.node,
        postgres: pgVersion,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model,
        memoryBytes: totalmem(),
      },
      ceiling: { ...ceiling, responseBytes: bareBytes },
      authenticated: { ...authenticated, responseBytes: summaryBytes },
      ratio,
      targets: { minRatio: TARGET_RATIO, maxP99Ms: TARGET_P99_MS },
      pass: { ratio: ratioPass, p99: p99Pass, all: ratioPass && p99Pass },
    };
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `api-${results.timestamp.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nfigures written to ${file}`);
    if ([ceiling, authenticated].some((f) => f.non2xx || f.errors || f.timeouts)) process.exitCode = 1;
  } finally {
    await Promise.all(children.map(stopChild));
    if (dbCreated) await adminQuery(`drop database if exists ${dbName} with (force)`).catch((error) => console.error(`could not drop ${dbName}: ${error.message}`));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`${signal}: stopping servers and dropping the benchmark database\n`);
    Promise.all(children.map(stopChild))
      .then(() => adminQuery(`drop database if exists vp_bench_${process.pid} with (force)`))
      .catch(() => undefined)
      .finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (error) {
  console.error(`bench:api failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
