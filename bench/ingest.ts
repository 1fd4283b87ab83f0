/**
 * `npm run bench:ingest`: a generated ZIP of BENCH_IMAGES (10,000) 640×480 JPEGs with YOLO boxes goes through the
 * upload API and an ingest job of a real control plane; printed: images/s from the ingest request to the job's
 * completion, and the control plane's peak RSS during it, with what that peak is made of (bench/memory-probe.ts,
 * preloaded into the control plane). The ceiling, in the same run: a bare loop that decodes and thumbnails the same
 * images with sharp, as many at a time as there are cores. Rounds (BENCH_ROUNDS, 3) alternate the ceiling and an
 * ingest into a new dataset; the ratio is the median of the rounds' ratios, with its spread. Then the NDJSON export of
 * BENCH_EXPORT_IMAGES (100,000) images seeded in SQL, timed cold.
 *
 * Targets (issues 5, 40): ingest ≥ 60% of the ceiling's images/s; peak RSS < 300 MB; export < 5 s.
 * Environment: BENCH_IMAGES, BENCH_ROUNDS, BENCH_EXPORT_IMAGES, TEST_PG_URL, BENCH_SERVER_NODE_ARGS (e.g.
 * `--cpu-prof --cpu-prof-dir=DIR`). Everything is stopped and dropped at the end; exit status 1 when something failed
 * (the verdicts do not change it). Figures go to a JSON file (see recordResult).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import sharp from 'sharp';
import { THUMBNAIL_WEBP } from '../control-plane/src/images/image-decode.ts';
import { api, buildZip, jobEnded, pool, uploadArchive } from './generated-dataset.ts';
import type { MemorySample } from './memory-probe.ts';
import {
  adminQuery,
  median,
  positiveInt,
  ratioOfRounds,
  recordResult,
  rssBytes,
  runBenchmark,
  spreadText,
  startControlPlane,
  stopChild,
  type Figure,
  SERVER_NODE_ARGS,
} from './lib.ts';

const IMAGES = positiveInt('BENCH_IMAGES', 10_000);
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
const EXPORT_IMAGES = positiveInt('BENCH_EXPORT_IMAGES', 100_000);
const TARGET_RATIO = 0.6;
const TARGET_RSS_MB = 300;
const TARGET_EXPORT_S = 5;
const MB = 1e6;

const database = `vp_bench_ingest_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-ingest-'));

/** The ceiling: decode and thumbnail every image with sharp, on all cores, nothing else. */
async function ceiling(jpegs: Buffer[]): Promise<number> {
  const started = performance.now();
  await pool(jpegs.length, availableParallelism(), async (i) => {
    await sharp(jpegs[i]).metadata();
    await sharp(jpegs[i]).rotate().resize({ width: 256, height: 256, fit: 'inside' }).webp(THUMBNAIL_WEBP).toBuffer();
  });
  return jpegs.length / ((performance.now() - started) / 1000);
}

async function main(): Promise<void> {
  process.stderr.write(`generating ${IMAGES} JPEGs into a ZIP…\n`);
  const zipPath = join(work, 'bench.zip');
  const jpegs = await buildZip(zipPath, IMAGES);
  const size = statSync(zipPath).size;

  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const probeFile = join(work, 'memory-peak.json');
  const { child, base } = await startControlPlane('control-plane', {
    databaseName: database,
    dataDir,
    nodeArgs: ['--import', './bench/memory-probe.ts', ...SERVER_NODE_ARGS],
    env: { MEMORY_PROBE_FILE: probeFile },
  });
  try {
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    const { username: owner } = await api<{ username: string }>(base, key, 'GET', '/api/account/summary');
    const pid = child.proc.pid!;

    /** One upload and ingest into a new dataset: images/s (request to job completed) and the peak RSS meanwhile. */
    const ingestOnce = async (slug: string) => {
      const { id } = await api<{ id: string }>(base, key, 'POST', '/api/datasets', { dataset: slug, name: slug });
      const sessionId = await uploadArchive(base, key, id, zipPath);
      // The probe's peak starts again here: what the ingest itself holds, not the upload before it.
      rmSync(probeFile, { force: true });
      child.proc.kill('SIGUSR2');
      let peak = rssBytes(pid);
      const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 50);
      const started = performance.now();
      const { jobId } = await api<{ jobId: string }>(base, key, 'POST', `/api/datasets/${owner}/${slug}/ingest`, {
        sessionId,
      });
      const job = await jobEnded(base, key, jobId, 'ingest');
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
      const made = existsSync(probeFile) ? (JSON.parse(readFileSync(probeFile, 'utf8')) as MemorySample) : undefined;
      return { seconds, rate: IMAGES / seconds, peak, made, result: job.result };
    };

    const rounds: Array<{ ceiling: number } & Awaited<ReturnType<typeof ingestOnce>>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      process.stderr.write(`round ${round}/${ROUNDS}: ceiling (sharp decode + thumbnail), then an ingest…\n`);
      const ceilingRate = await ceiling(jpegs);
      rounds.push({ ceiling: ceilingRate, ...(await ingestOnce(`bench-${round}`)) });
    }

    process.stderr.write(`seeding ${EXPORT_IMAGES} images for the export…\n`);
    const exportSeconds = await timeExport(base, key, owner);

    const { ratio, spread } = ratioOfRounds(rounds.map((r) => r.rate / r.ceiling));
    const rate = median(rounds.map((r) => r.rate));
    const ceilingRate = median(rounds.map((r) => r.ceiling));
    const highest = rounds.reduce((a, b) => (b.peak > a.peak ? b : a));
    const peakMb = highest.peak / MB;
    const ingest: Figure = {
      figure: `ingest of ${IMAGES} JPEGs`,
      value: rate,
      unit: 'images/s',
      ceiling: ceilingRate,
      ratio,
      spread,
      target: `ratio >= ${TARGET_RATIO * 100}%`,
      pass: ratio >= TARGET_RATIO,
    };
    const rss: Figure = {
      figure: 'ingest, control-plane peak RSS',
      value: peakMb,
      unit: 'MB',
      target: `< ${TARGET_RSS_MB} MB`,
      pass: peakMb < TARGET_RSS_MB,
    };
    const exported: Figure = {
      figure: `NDJSON export of ${EXPORT_IMAGES} images`,
      value: exportSeconds,
      unit: 's',
      target: `< ${TARGET_EXPORT_S} s`,
      pass: exportSeconds < TARGET_EXPORT_S,
    };
    const verdict = (figure: Figure) => (figure.pass ? 'PASS' : 'FAIL');
    const rates = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ');
    console.log(
      `\nbench:ingest — ${IMAGES} JPEGs 640×480 (${(size / MB).toFixed(0)} MB ZIP), ${cpus().length} cores, ${ROUNDS} alternated rounds\n`,
    );
    console.log(
      `ceiling (sharp decode + thumbnail, ${availableParallelism()} at a time): ${ceilingRate.toFixed(1)} images/s (rounds ${rates(rounds.map((r) => r.ceiling))})`,
    );
    console.log(
      `ingest (request → job completed):                 ${rate.toFixed(1)} images/s (rounds ${rates(rounds.map((r) => r.rate))}) = ${(100 * ratio).toFixed(0)}% of the ceiling (median of rounds, ${spreadText(spread)}; target ≥ ${TARGET_RATIO * 100}%) ${verdict(ingest)}`,
    );
    const last = rounds.at(-1)!.result;
    console.log(
      `job result: ${JSON.stringify({ imagesAdded: last?.imagesAdded, labelsAdded: last?.labelsAdded, labelErrors: last?.labelErrors, seconds: last?.seconds })}`,
    );
    console.log(
      `control-plane peak RSS during an ingest: ${peakMb.toFixed(0)} MB (rounds ${rounds.map((r) => (r.peak / MB).toFixed(0)).join(', ')}; target < ${TARGET_RSS_MB} MB) ${verdict(rss)}`,
    );
    if (highest.made) console.log(`  made of, at the probe's peak: ${memoryMadeOf(highest.made)}`);
    console.log(
      `NDJSON export of ${EXPORT_IMAGES} images, cold: ${exportSeconds.toFixed(2)} s (target < ${TARGET_EXPORT_S} s) ${verdict(exported)}`,
    );
    recordResult('ingest', [ingest, rss, exported], { zipBytes: size, rounds });
  } finally {
    await stopChild(child);
  }
}

/** A peak sample in words: V8's heap, what V8 knows of outside it, and the rest (native), by RSS kind. */
function memoryMadeOf(sample: MemorySample): string {
  const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
  const native = sample.rss - sample.heapTotal - sample.external;
  return [
    `RSS ${mb(sample.rss)}`,
    `V8 heap ${mb(sample.heapTotal)} (${mb(sample.heapUsed)} used)`,
    `external to V8 ${mb(sample.external)} (array buffers ${mb(sample.arrayBuffers)})`,
    `the rest ${mb(native)} (libvips, allocator, worker threads, code)`,
    `by kind: anonymous ${mb(sample.rssAnon)}, file-backed ${mb(sample.rssFile)}`,
  ].join('; ');
}

/** Seeds a second dataset in SQL (3 boxes an image), then times GET .../export until its file is downloaded. */
async function timeExport(base: string, key: string, owner: string): Promise<number> {
  const { id } = await api<{ id: string }>(base, key, 'POST', '/api/datasets', {
    dataset: 'exported',
    name: 'Exported',
    classNames: ['a', 'b', 'c'],
  });
  const workspace = (await adminQuery(`select workspace_id from datasets where id = '${id}'`, database)).rows[0]
    .workspace_id as string;
  const seconds = (Math.floor(Date.now() / 1000) - EXPORT_IMAGES).toString(16).padStart(8, '0');
  const image = `'${seconds}' || lpad(to_hex(g), 16, '0')`;
  await adminQuery(
    `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, split, label_count, class_ids, bytes)
     select ${image}, now() - (${EXPORT_IMAGES} - g) * interval '1 second', now(), '${workspace}', '${id}', md5(g::text) || md5((g + 1)::text), 'jpg',
       'img-' || g || '.jpg', 640, 480, case when g % 10 < 8 then 'train' else 'val' end, 3, '{0,1,2}', 50000
     from generate_series(1::bigint, ${EXPORT_IMAGES}) g`,
    database,
  );
  await adminQuery(
    `insert into annotations (image_id, position, dataset_id, class_id, label, cx, cy, w, h, points)
     select ${image}, p, '${id}', p, jsonb_build_object('classId', p, 'bbox', jsonb_build_array(0.5, 0.5, 0.1 + p * 0.1, 0.2)), 0.5, 0.5, 0.1 + p * 0.1, 0.2, 2
     from generate_series(1::bigint, ${EXPORT_IMAGES}) g cross join generate_series(0, 2) p`,
    database,
  );
  await adminQuery(
    `update datasets set image_count = ${EXPORT_IMAGES}, annotation_count = ${3 * EXPORT_IMAGES}, train_count = ${0.8 * EXPORT_IMAGES}, val_count = ${0.2 * EXPORT_IMAGES}, labeled_count = ${EXPORT_IMAGES}, revision = revision + 1 where id = '${id}'`,
    database,
  );
  await adminQuery('vacuum analyze images', database);
  await adminQuery('vacuum analyze annotations', database);
  const started = performance.now();
  const { downloadUrl, cached } = await api<{ downloadUrl: string; cached: boolean }>(
    base,
    key,
    'GET',
    `/api/datasets/${owner}/exported/export`,
  );
  if (cached) throw new Error('the first export of a dataset answered from cache');
  const file = await fetch(downloadUrl);
  const lines = (await file.text()).split('\n').filter(Boolean).length;
  const elapsed = (performance.now() - started) / 1000;
  if (lines !== EXPORT_IMAGES + 1) throw new Error(`the export has ${lines} lines, expected ${EXPORT_IMAGES + 1}`);
  return elapsed;
}

await runBenchmark('bench:ingest', main, async () => {
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
