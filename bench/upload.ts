/**
 * `npm run bench:upload`: PUT one large file through the control plane's upload URL into each blob store, against the
 * simplest program that does what the PUT must (bench/upload-sink.ts: a bare node:http server streaming the body from
 * its socket into a file on the same disk) — the ceiling, in the same run. Prints MB/s for each and the control
 * plane's peak RSS growth during the upload (sampled from /proc).
 *
 * Rounds alternate the ceiling and the PUTs (same client, curl, reading the same file; each timed from a synced disk
 * until its bytes are on disk), and the ratio is the median of the rounds' ratios, printed with their spread.
 * Environment: BENCH_UPLOAD_GIB (2), BENCH_REPEAT (3), TEST_PG_URL, BENCH_S3=0 to skip the S3 store,
 * BENCH_SERVER_NODE_ARGS (extra node flags for the control plane, e.g. --cpu-prof).
 * Targets (issues 3, 40): disk store ≥ 70% of the ceiling; peak RSS growth < 100 MB for every store.
 * Figures go to a JSON file (see recordResult).
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { startS3Process } from '../test/helpers/s3-server.ts';
import {
  adminQuery,
  children,
  median,
  positiveInt,
  putFile,
  ratioOfRounds,
  recordResult,
  rssBytes,
  runBenchmark,
  spreadText,
  startChild,
  startControlPlane,
  stopChild,
  type Figure,
  SERVER_NODE_ARGS,
} from './lib.ts';

const GIB = positiveInt('BENCH_UPLOAD_GIB', 2);
/** Each ratio is the median of this many alternated rounds: this disk's speed swings from run to run. */
const REPEAT = positiveInt('BENCH_REPEAT', 3);
const TARGET_RATIO = 0.7;
const TARGET_RSS_MB = 100;
const MB = 1e6;

/** A file of GIB GiB of varied bytes (not zeros, which some layers compress or skip). */
async function makeSource(path: string): Promise<number> {
  const block = Buffer.alloc(1 << 20);
  for (let i = 0; i < block.length; i++) block[i] = (i * 131 + (i >> 8)) & 0xff;
  const total = GIB * 1024;
  await pipeline(
    (async function* () {
      for (let i = 0; i < total; i++) yield block;
    })(),
    createWriteStream(path),
  );
  return statSync(path).size;
}

async function timed(run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await run();
  return (performance.now() - started) / 1000;
}

function command(name: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    spawn(name, args, { stdio: 'inherit' }).once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${name} exited ${code}`)),
    );
  });
}

/**
 * Every measurement starts with no dirty pages waiting and ends once its bytes are on disk: the ceiling and the PUT
 * are both timed to the disk, not to the page cache, whose state otherwise decides the figures.
 */
const settle = () => command('sync', []);

/** A control plane on one store, ready to take uploads; its RSS is sampled from the moment it is up. */
interface Target {
  store: string;
  /** Times one PUT of the file until its bytes are on disk. */
  upload(): Promise<number>;
  rssGrowthBytes(): number;
  close(): Promise<void>;
}

async function openTarget(
  store: string,
  storageUrl: string | undefined,
  dir: string,
  source: string,
  size: number,
): Promise<Target> {
  const dbName = `vp_bench_upload_${store}_${process.pid}`;
  await adminQuery(`drop database if exists ${dbName} with (force)`);
  await adminQuery(`create database ${dbName}`);
  const dataDir = mkdtempSync(join(dir, `data-${store}-`));
  const { child, base } = await startControlPlane(`control-plane (${store})`, {
    databaseName: dbName,
    dataDir,
    env: storageUrl ? { STORAGE_URL: storageUrl } : {},
    nodeArgs: SERVER_NODE_ARGS,
  });
  const close = async () => {
    await stopChild(child);
    await adminQuery(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    // No dataset API yet in this issue: the benchmark writes the row the API would.
    const datasetId = 'b'.repeat(24);
    await adminQuery(
      `insert into datasets (id, created_at, updated_at, workspace_id, slug, name)
      select '${datasetId}', now(), now(), id, 'bench', 'Bench' from workspaces where handle = 'admin'`,
      dbName,
    );
    const ticket = async () => {
      const response = await fetch(`${base}/api/upload/signed-url`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          assetType: 'datasets',
          assetId: datasetId,
          filename: 'bench.tar',
          contentType: 'application/x-tar',
          totalBytes: size,
        }),
      });
      const body = (await response.json()) as { uploadUrl: string; headers: Record<string, string>; error?: string };
      if (!response.ok) throw new Error(`signed-url answered ${response.status}: ${body.error}`);
      return body;
    };
    const pid = child.proc.pid!;
    const before = rssBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
    return {
      store,
      upload: async () => {
        const { uploadUrl, headers } = await ticket();
        await settle();
        return timed(async () => {
          await putFile(uploadUrl, headers, source);
          await settle();
        });
      },
      rssGrowthBytes: () => Math.max(0, peak - before),
      close: async () => {
        clearInterval(sampler);
        await close();
      },
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The ceiling: bench/upload-sink.ts writing into `dir` (the store's disk), timed as the PUT is. */
async function openSink(dir: string, source: string): Promise<{ upload(): Promise<number> }> {
  const file = join(dir, 'sink.bin');
  const { match: base } = await startChild(
    'upload sink',
    ['bench/upload-sink.ts'],
    { ...process.env, SINK_FILE: file },
    /^upload sink listening on (\S+)/,
  );
  return {
    upload: async () => {
      await settle();
      const seconds = await timed(async () => {
        await putFile(base, {}, source);
        await settle();
      });
      rmSync(file);
      return seconds;
    },
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-bench-upload-'));
  const targets: Target[] = [];
  let s3: Awaited<ReturnType<typeof startS3Process>> | undefined;
  try {
    const source = join(dir, 'source.bin');
    process.stderr.write(`writing a ${GIB} GiB source file in ${dir}\n`);
    const size = await makeSource(source);
    targets.push(await openTarget('disk', undefined, dir, source, size));
    if (process.env.BENCH_S3 !== '0') {
      s3 = await startS3Process(join(dir, 's3'));
      targets.push(await openTarget('s3', s3.storageUrl, dir, source, size));
    }

    const sink = await openSink(dir, source);
    // Rounds alternate the ceiling and the PUTs, so that each sees the disk in the same state as the others.
    const sinkRuns: number[] = [];
    const putRuns = new Map<Target, number[]>(targets.map((target) => [target, []]));
    for (let round = 1; round <= REPEAT; round++) {
      process.stderr.write(
        `round ${round}/${REPEAT}: the bare sink, then PUT ${(size / MB).toFixed(0)} MB to ${targets.map((t) => t.store).join(', ')}\n`,
      );
      sinkRuns.push(await sink.upload());
      for (const target of targets) putRuns.get(target)!.push(await target.upload());
    }

    const rate = (seconds: number) => size / MB / seconds;
    const runRates = (runs: number[]) => runs.map((x) => rate(x).toFixed(0)).join(', ');
    const sinkRate = rate(median(sinkRuns));
    const figures: Figure[] = [];
    console.log(
      `\n${(size / MB).toFixed(0)} MB file, same disk, same client (curl), ${REPEAT} alternated rounds; Node ${process.versions.node}`,
    );
    console.log(
      `${'bare sink (ceiling)'.padEnd(28)}${sinkRate.toFixed(0).padStart(8)} MB/s   runs ${runRates(sinkRuns)}`,
    );
    for (const target of targets) {
      const runs = putRuns.get(target)!;
      const { ratio, spread } = ratioOfRounds(runs.map((seconds, round) => sinkRuns[round] / seconds));
      const rssMb = target.rssGrowthBytes() / MB;
      // Only the disk store has a target: S3 here is a local test server, shown for comparison.
      const throughput: Figure = {
        figure: `PUT → ${target.store} store (bare sink: ceiling)`,
        value: rate(median(runs)),
        unit: 'MB/s',
        ceiling: sinkRate,
        ratio,
        spread,
        ...(target.store === 'disk' ? { target: `ratio >= ${TARGET_RATIO * 100}%`, pass: ratio >= TARGET_RATIO } : {}),
      };
      const rss: Figure = {
        figure: `PUT → ${target.store}, peak RSS growth`,
        value: rssMb,
        unit: 'MB',
        target: `< ${TARGET_RSS_MB} MB`,
        pass: rssMb < TARGET_RSS_MB,
      };
      figures.push(throughput, rss);
      const share = `ratio ${(ratio * 100).toFixed(0)}% of the sink (median of rounds, ${spreadText(spread)})`;
      const verdicts = [
        throughput.target ? `${share} (target >= ${TARGET_RATIO * 100}%) ${throughput.pass ? 'PASS' : 'FAIL'}` : share,
        `peak RSS growth ${rssMb.toFixed(1)} MB (target < ${TARGET_RSS_MB} MB) ${rss.pass ? 'PASS' : 'FAIL'}`,
        `runs ${runRates(runs)}`,
      ];
      console.log(
        `${`PUT → ${target.store} store`.padEnd(28)}${rate(median(runs)).toFixed(0).padStart(8)} MB/s   ${verdicts.join('   ')}`,
      );
    }
    recordResult('upload', figures, {
      bytes: size,
      rounds: REPEAT,
      sinkSeconds: sinkRuns,
      putSeconds: Object.fromEntries(targets.map((target) => [target.store, putRuns.get(target)])),
    });
  } finally {
    for (const target of targets) await target.close();
    await s3?.stop();
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  }
}

await runBenchmark('bench:upload', main);
