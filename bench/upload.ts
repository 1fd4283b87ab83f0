/**
 * `npm run bench:upload`: PUT one large file through the control plane's upload URL into each blob
 * store, against a plain `cp` of the same file on the same disk (the ceiling), in the same run.
 * Prints MB/s for each and the control plane's peak RSS growth during the upload (sampled from /proc).
 *
 * Environment: BENCH_UPLOAD_GIB (2), TEST_PG_URL, BENCH_S3=0 to skip the S3 store.
 * Targets (issue 3): disk store ≥ 70% of cp's throughput; peak RSS growth < 100 MB for every store.
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { startS3Process } from '../test/helpers/s3-server.ts';
import { adminQuery, children, positiveInt, startControlPlane, stopChild } from './lib.ts';

const GIB = positiveInt('BENCH_UPLOAD_GIB', 2);
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

function cp(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    spawn('cp', [from, to], { stdio: 'inherit' }).once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`cp exited ${code}`))));
  });
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) * 1024 : 0;
}

/** Streams the file to the signed URL with exactly the returned headers. */
function putFile(url: string, headers: Record<string, string>, path: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { ...headers, 'Content-Length': String(size) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`PUT answered ${res.statusCode}: ${text}`))));
    });
    req.once('error', reject);
    pipeline(createReadStream(path, { highWaterMark: 1 << 20 }), req).catch(reject);
  });
}

interface Run {
  store: string;
  seconds: number;
  rssGrowthBytes: number;
}

async function uploadThrough(store: string, storageUrl: string | undefined, dir: string, source: string, size: number): Promise<Run> {
  const dbName = `vp_bench_upload_${process.pid}`;
  await adminQuery(`drop database if exists ${dbName} with (force)`);
  await adminQuery(`create database ${dbName}`);
  const dataDir = mkdtempSync(join(dir, `data-${store}-`));
  const { child, base } = await startControlPlane(`control-plane (${store})`, {
    databaseName: dbName,
    dataDir,
    env: storageUrl ? { STORAGE_URL: storageUrl } : {},
  });
  try {
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    // No dataset API yet in this issue: the benchmark writes the row the API would.
    const datasetId = 'b'.repeat(24);
    await adminQuery(`insert into datasets (id, created_at, updated_at, workspace_id, slug, name)
      select '${datasetId}', now(), now(), id, 'bench', 'Bench' from workspaces where handle = 'admin'`, dbName);
    const ticketResponse = await fetch(`${base}/api/upload/signed-url`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ assetType: 'datasets', assetId: datasetId, filename: 'bench.tar', contentType: 'application/x-tar', totalBytes: size }),
    });
    const ticket = (await ticketResponse.json()) as { uploadUrl: string; headers: Record<string, string>; error?: string };
    if (!ticketResponse.ok) throw new Error(`signed-url answered ${ticketResponse.status}: ${ticket.error}`);

    const pid = child.proc.pid!;
    const before = rssBytes(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
    process.stderr.write(`${store}: PUT ${(size / MB).toFixed(0)} MB through the control plane\n`);
    const seconds = await timed(() => putFile(ticket.uploadUrl, ticket.headers, source, size));
    clearInterval(sampler);
    return { store, seconds, rssGrowthBytes: Math.max(0, peak - before) };
  } finally {
    await stopChild(child);
    await adminQuery(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-bench-upload-'));
  try {
    const source = join(dir, 'source.bin');
    process.stderr.write(`writing a ${GIB} GiB source file in ${dir}\n`);
    const size = await makeSource(source);
    const copy = join(dir, 'copy.bin');
    const cpSeconds = await timed(() => cp(source, copy));
    rmSync(copy);

    const runs: Run[] = [await uploadThrough('disk', undefined, dir, source, size)];
    if (process.env.BENCH_S3 !== '0') {
      const s3 = await startS3Process(join(dir, 's3'));
      try {
        runs.push(await uploadThrough('s3', s3.storageUrl, dir, source, size));
      } finally {
        await s3.stop();
      }
    }

    const rate = (seconds: number) => size / MB / seconds;
    console.log(`\n${(size / MB).toFixed(0)} MB file, same disk; Node ${process.versions.node}`);
    console.log(`${'cp (ceiling)'.padEnd(28)}${rate(cpSeconds).toFixed(0).padStart(8)} MB/s`);
    for (const run of runs) {
      const ratio = cpSeconds / run.seconds;
      const rssMb = run.rssGrowthBytes / MB;
      const verdicts = [
        run.store === 'disk' ? `ratio ${(ratio * 100).toFixed(0)}% of cp (target >= ${TARGET_RATIO * 100}%) ${ratio >= TARGET_RATIO ? 'PASS' : 'FAIL'}` : `ratio ${(ratio * 100).toFixed(0)}% of cp`,
        `peak RSS growth ${rssMb.toFixed(1)} MB (target < ${TARGET_RSS_MB} MB) ${rssMb < TARGET_RSS_MB ? 'PASS' : 'FAIL'}`,
      ];
      console.log(`${`PUT → ${run.store} store`.padEnd(28)}${rate(run.seconds).toFixed(0).padStart(8)} MB/s   ${verdicts.join('   ')}`);
    }
  } finally {
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  await main();
} catch (error) {
  console.error(`bench:upload failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
