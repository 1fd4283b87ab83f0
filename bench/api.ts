/**
 * `npm run bench:api`: the authenticated `GET /api/account/summary` of the real control plane on
 * PostgreSQL against a bare Koa app answering a constant JSON body (the ceiling).
 *
 * Both servers run as child processes; autocannon drives them from this process. The control plane
 * gets a fresh database `vp_bench_<pid>` on TEST_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * a temporary DATA_DIR and rate limits high enough not to throttle the run; its first start creates
 * the admin key this benchmark uses. Everything is stopped and dropped at the end, also on error.
 *
 * Environment: BENCH_SECONDS (10), BENCH_CONNECTIONS (32), BENCH_WARMUP_SECONDS (2), BENCH_ROUNDS (3), TEST_PG_URL,
 * BENCH_SERVER_NODE_ARGS (extra node flags for the control plane, e.g. `--cpu-prof --cpu-prof-dir=DIR`).
 * Targets (issue 2): authenticated ≥ 20% of the ceiling's requests/s and authenticated p99 < 20 ms. Issue 38 (see
 * api-metrics.ts): a second control plane with its metrics on keeps ≥ 95% of the first's authenticated requests/s,
 * and a scrape of it with 1,000 hosts' GPU series takes < 100 ms (median of 10). The three servers take turns in BENCH_ROUNDS
 * (3) alternated rounds whose order flips each round (issue 40); each ratio is the median of the rounds' ratios, with
 * its spread, and the p99 the median of the rounds'.
 * Figures go to a JSON file (see recordResult). Exit status 1 when a run had non-2xx responses, errors
 * or timeouts, or anything failed; the PASS/FAIL verdict itself does not change the exit status.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon, { type Result } from 'autocannon';
import { METRICS_TOKEN, SCRAPED_HOSTS, scrapeTimes, seedScrapedHosts } from './api-metrics.ts';
import {
  adminQuery,
  children,
  median,
  positiveInt,
  ratioOfRounds,
  recordResult,
  runBenchmark,
  spreadText,
  startChild,
  startControlPlane,
  stopChild,
  SERVER_NODE_ARGS,
} from './lib.ts';

const SECONDS = positiveInt('BENCH_SECONDS', 10);
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 32);
const WARMUP_SECONDS = positiveInt('BENCH_WARMUP_SECONDS', 2);
/** Extra node flags for the control plane only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it. */
const TARGET_RATIO = 0.2;
const TARGET_P99_MS = 20;
const TARGET_METERED_RATIO = 0.95;
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
const TARGET_SCRAPE_MS = 100;

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
  process.stderr.write(
    `${target}: warming up ${WARMUP_SECONDS} s, then ${SECONDS} s with ${CONNECTIONS} connections\n`,
  );
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

/** The first round's ceiling and authenticated runs side by side. */
function printRound(ceiling: Figures, authenticated: Figures): void {
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
  console.log();
  console.log(
    `${CONNECTIONS} connections, ${SECONDS} s each (after ${WARMUP_SECONDS} s warm-up), ${cpus().length} CPUs, Node ${process.versions.node}; the first round:`,
  );
  console.log(row(columns));
  console.log(row(figures(ceiling)));
  console.log(row(figures(authenticated)));
  console.log();
}

function warnAboutFailures(runs: Figures[]): void {
  for (const f of runs) {
    if (f.non2xx || f.errors || f.timeouts) {
      console.log(
        `WARNING ${f.target}: ${f.non2xx} non-2xx (${JSON.stringify(f.statusCodes)}), ${f.errors} errors, ${f.timeouts} timeouts`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const dbName = `vp_bench_${process.pid}`;
  const meteredDb = `${dbName}_metered`;
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-bench-'));
  const meteredDir = mkdtempSync(join(tmpdir(), 'vp-bench-metered-'));
  let dbCreated = false;
  try {
    for (const name of [dbName, meteredDb]) {
      await adminQuery(`drop database if exists ${name} with (force)`);
      await adminQuery(`create database ${name}`);
    }
    dbCreated = true;
    const pgVersion = String((await adminQuery('show server_version')).rows[0].server_version);

    const { base: apiBase } = await startControlPlane('control-plane', {
      databaseName: dbName,
      dataDir,
      nodeArgs: SERVER_NODE_ARGS,
    });
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    const { base: meteredBase } = await startControlPlane('control-plane-metered', {
      databaseName: meteredDb,
      dataDir: meteredDir,
      nodeArgs: SERVER_NODE_ARGS,
      env: { METRICS_TOKEN },
    });
    const meteredKey = readFileSync(join(meteredDir, 'initial-api-key'), 'utf8').trim();
    await seedScrapedHosts(meteredDb);
    const { match: bareBase } = await startChild(
      'bare-koa',
      ['bench/bare-koa.ts'],
      { ...process.env, PORT: '0', HOST: '127.0.0.1' },
      /^bare koa listening on (\S+)/,
    );

    const summaryUrl = `${apiBase}/api/account/summary`;
    const auth = { authorization: `Bearer ${key}` };
    const bareBytes = await expectOk(bareBase, {});
    const summaryBytes = await expectOk(summaryUrl, auth);

    const meteredUrl = `${meteredBase}/api/account/summary`;
    const meteredAuth = { authorization: `Bearer ${meteredKey}` };
    await expectOk(meteredUrl, meteredAuth);
    // Alternated rounds whose order flips each round (ceiling plain metered, metered plain ceiling, …), so a drift of the
    // machine within a round weighs on both sides of each ratio alike; each ratio is the median of the rounds' ratios,
    // so one noisy round cannot flip a verdict.
    const ceilingRuns: Figures[] = [];
    const plainRuns: Figures[] = [];
    const meteredRuns: Figures[] = [];
    const bare = async () => ceilingRuns.push(await measure('bare Koa (ceiling)', bareBase, {}));
    const plain = async () => plainRuns.push(await measure('GET /api/account/summary (key)', summaryUrl, auth));
    const metered = async () =>
      meteredRuns.push(await measure('GET /api/account/summary (key), metrics on', meteredUrl, meteredAuth));
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const run of round % 2 === 1 ? [bare, plain, metered] : [metered, plain, bare]) await run();
    }
    printRound(ceilingRuns[0]!, plainRuns[0]!);
    const medianOf = (runs: Figures[], figure: (f: Figures) => number) => median(runs.map(figure));
    const perSecond = (f: Figures) => f.requestsPerSecond;
    const { ratio, spread } = ratioOfRounds(
      plainRuns.map((run, round) => run.requestsPerSecond / ceilingRuns[round]!.requestsPerSecond),
    );
    const p99Ms = medianOf(plainRuns, (f) => f.p99Ms);
    const { ratio: meteredRatio, spread: meteredSpread } = ratioOfRounds(
      meteredRuns.map((run, round) => run.requestsPerSecond / plainRuns[round]!.requestsPerSecond),
    );
    const verdict = (pass: boolean) => (pass ? 'PASS' : 'FAIL');
    console.log(
      `authenticated / ceiling, requests/s  ${(ratio * 100).toFixed(1)}%, median of ${ROUNDS} rounds, ${spreadText(spread)}  (target >= ${TARGET_RATIO * 100}%)  ${verdict(ratio >= TARGET_RATIO)}`,
    );
    console.log(
      `authenticated p99, median of the rounds  ${p99Ms} ms  (target < ${TARGET_P99_MS} ms)  ${verdict(p99Ms < TARGET_P99_MS)}`,
    );
    warnAboutFailures([...ceilingRuns, ...plainRuns, ...meteredRuns]);
    const scrape = await scrapeTimes(meteredBase);
    const scrapeMs = [...scrape.ms].sort((a, b) => a - b)[Math.floor(scrape.ms.length / 2)]!;
    console.log(
      `metrics on / off, requests/s  ${(meteredRatio * 100).toFixed(1)}%, median of ${ROUNDS} rounds, ${spreadText(meteredSpread)}  (target >= ${TARGET_METERED_RATIO * 100}%)`,
    );
    console.log(
      `scrape of ${scrape.gpuSeries} GPU series, median  ${scrapeMs.toFixed(1)} ms  (target < ${TARGET_SCRAPE_MS} ms)`,
    );

    recordResult(
      'api',
      [
        {
          figure: 'GET /api/account/summary, requests/s',
          value: medianOf(plainRuns, perSecond),
          unit: 'req/s',
          ceiling: medianOf(ceilingRuns, perSecond),
          ratio,
          spread,
          target: `ratio >= ${TARGET_RATIO * 100}%`,
          pass: ratio >= TARGET_RATIO,
        },
        {
          figure: 'GET /api/account/summary, p99',
          value: p99Ms,
          unit: 'ms',
          ceiling: medianOf(ceilingRuns, (f) => f.p99Ms),
          target: `< ${TARGET_P99_MS} ms`,
          pass: p99Ms < TARGET_P99_MS,
        },
        {
          figure: 'GET /api/account/summary with metrics on, requests/s',
          value: medianOf(meteredRuns, perSecond),
          unit: 'req/s',
          ceiling: medianOf(plainRuns, perSecond),
          ratio: meteredRatio,
          spread: meteredSpread,
          target: `ratio >= ${TARGET_METERED_RATIO * 100}%`,
          pass: meteredRatio >= TARGET_METERED_RATIO,
        },
        {
          figure: `GET /metrics with ${SCRAPED_HOSTS.toLocaleString()} hosts' GPU series, median of ${scrape.ms.length}`,
          value: scrapeMs,
          unit: 'ms',
          target: `< ${TARGET_SCRAPE_MS} ms`,
          pass: scrapeMs < TARGET_SCRAPE_MS,
        },
      ],
      {
        connections: CONNECTIONS,
        durationSeconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        postgres: pgVersion,
        responseBytes: { ceiling: bareBytes, authenticated: summaryBytes },
        ceilingRuns,
        plainRuns,
        meteredRuns,
        scrapeMs: scrape.ms,
      },
    );
    if ([...ceilingRuns, ...plainRuns, ...meteredRuns].some((f) => f.non2xx || f.errors || f.timeouts))
      process.exitCode = 1;
  } finally {
    await Promise.all(children.map(stopChild));
    if (dbCreated)
      for (const name of [dbName, meteredDb])
        await adminQuery(`drop database if exists ${name} with (force)`).catch((error: unknown) =>
          console.error(`could not drop ${name}: ${error instanceof Error ? error.message : String(error)}`),
        );
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(meteredDir, { recursive: true, force: true });
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
      .then(() => adminQuery(`drop database if exists vp_bench_${process.pid}_metered with (force)`))
      .catch(() => undefined)
      .finally(() => process.exit(130));
  });
}

await runBenchmark('bench:api', main);
