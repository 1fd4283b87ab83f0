/**
 * `npm run bench:embed`: the image embeddings of issue 20, in three parts (BENCH_EMBED_PARTS, comma-separated, runs
 * some of them; default all three):
 * - analysis: dataset analysis, `POST /api/datasets/{owner}/{dataset}/embeddings`, of BENCH_IMAGES (10,000) generated
 *   640×480 JPEGs ingested into a real control plane (the ingest is not timed): images/s from the request to the
 *   analysis' completion. The ceiling, in the same run: the same ONNX model (the control plane's: EMBEDDING_MODEL_PATH,
 *   else the newest build of installer/models/build-models.sh) run bare by onnxruntime-node on the same JPEG bytes:
 *   sharp squashes each to the model's 224×224 input, normalised as the control plane does, in batches of 16, with as
 *   many threads as the control plane gives its embedder (half the cores, at least one). BENCH_ROUNDS (3) rounds, each
 *   the analysis of a dataset of its own, alternate with the ceiling (ceiling, analysis, ceiling, …); the ratio is the
 *   median of the rounds' ratios (an analysis against the mean of the ceilings either side), with its spread.
 *   Target: ≥ 80% of the ceiling.
 * - layout: the clustering the analysis ends with (its layout stage: UMAP and islands on a thread of their own) of
 *   BENCH_LAYOUT_POINTS (50,000, the most the job lays out) generated vectors; the time, printed (no target).
 * - similar: the similar-image query at BENCH_VECTORS (1,000,000) generated vectors in the control plane's own index
 *   (newIndex: usearch HNSW, f16, inner product), built in batches (the build time and RSS printed); BENCH_QUERIES
 *   (1,000) held-out queries searched one at a time on one thread, as a request does: p50 and p95, target p95 < 50 ms.
 *   The ceiling: exact search (brute force over every vector, one thread) of the first BENCH_EXACT_QUERIES (200), its
 *   time per query; its top 10 is the truth for recall@10, target ≥ 0.95.
 * The generated vectors (bench/clustered-vectors.ts): 1280-d unit vectors in clusters, from a fixed seed.
 * Environment: BENCH_EMBED_PARTS, BENCH_IMAGES, BENCH_ROUNDS, BENCH_LAYOUT_POINTS, BENCH_VECTORS, BENCH_QUERIES, BENCH_EXACT_QUERIES, TEST_PG_URL.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import { loadConfig } from '@vp/config';
import { defaults } from '@vp/config';
import { ClusteredVectors } from './clustered-vectors.ts';
import { layout } from './embed-layout.ts';
import { similar } from './embed-similar.ts';
import { api, buildZip, ingestedDataset } from './generated-dataset.ts';
import {
  adminQuery,
  median,
  positiveInt,
  ratioOfRounds,
  recordResult,
  runBenchmark,
  spreadText,
  startControlPlane,
  stopChild,
  type Figure,
} from './lib.ts';

const PARTS = ['analysis', 'layout', 'similar'] as const;
const IMAGES = positiveInt('BENCH_IMAGES', 10_000);
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);
const LAYOUT_POINTS = positiveInt('BENCH_LAYOUT_POINTS', defaults.embeddingLayoutSample);
const VECTORS = positiveInt('BENCH_VECTORS', 1_000_000);
const QUERIES = positiveInt('BENCH_QUERIES', 1000);
const EXACT_QUERIES = positiveInt('BENCH_EXACT_QUERIES', 200);
/** The default image embedder's vector length (MobileNetV2's pooled features, installer/models/build-models.sh). */
const DIMENSIONS = 1280;
const VECTOR_SEED = 20;
const TARGET_RATIO = 0.8;
const BATCH = 16;
const SIDE = 224;
const THREADS = Math.max(1, Math.floor(availableParallelism() / 2));

const database = `vp_bench_embed_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-embed-'));

/** The ceiling: the model run bare on every image, batch after batch; images per second. */
async function ceiling(session: ort.InferenceSession, jpegs: Buffer[]): Promise<number> {
  const { embeddingMean: mean, embeddingStd: std } = loadConfig();
  const plane = SIDE * SIDE;
  const started = performance.now();
  for (let first = 0; first < jpegs.length; first += BATCH) {
    const batch = jpegs.slice(first, first + BATCH);
    const pixels = await Promise.all(
      batch.map((jpeg) => sharp(jpeg).removeAlpha().resize(SIDE, SIDE, { fit: 'fill' }).raw().toBuffer()),
    );
    const tensor = new Float32Array(batch.length * 3 * plane);
    pixels.forEach((rgb, n) => {
      for (let c = 0; c < 3; c++)
        for (let i = 0; i < plane; i++) tensor[(n * 3 + c) * plane + i] = (rgb[i * 3 + c] / 255 - mean[c]) / std[c];
    });
    const results = await session.run({
      [session.inputNames[0]]: new ort.Tensor('float32', tensor, [batch.length, 3, SIDE, SIDE]),
    });
    for (const result of Object.values(results)) result.dispose();
  }
  return jpegs.length / ((performance.now() - started) / 1000);
}

/** One analysis of the dataset, request to completion: its seconds, and those of its layout stage at the end. */
async function analysed(base: string, key: string, owner: string, slug: string) {
  const path = `/api/datasets/${owner}/${slug}/embeddings`;
  const started = performance.now();
  await api(base, key, 'POST', path);
  let summary: {
    embeddingsCount: number;
    activeJob: { progress: { percent: number; stage?: string } | null } | null;
  };
  let shown = -1;
  // When the job moved on to its layout stage: the split of the time is printed (where a shortfall comes from).
  let layoutStarted: number | undefined;
  for (;;) {
    summary = await api<typeof summary>(base, key, 'GET', path);
    if (summary.activeJob === null) break;
    if (summary.activeJob.progress?.stage === 'umap') layoutStarted ??= performance.now();
    const percent = summary.activeJob.progress?.percent ?? 0;
    if (percent >= shown + 10) process.stderr.write(`  analysis ${(shown = Math.floor(percent))}%\n`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const ended = performance.now();
  if (summary.embeddingsCount !== IMAGES)
    throw new Error(`the analysis embedded ${summary.embeddingsCount} of ${IMAGES} images`);
  return { seconds: (ended - started) / 1000, layoutSeconds: (ended - (layoutStarted ?? ended)) / 1000 };
}

/**
 * Part one: the analysis through a real control plane, against the model run bare. Rounds alternate the ceiling and
 * an analysis of a dataset of its own (ceiling, analysis, ceiling, …, ceiling); each analysis is judged against the
 * mean of the ceilings either side of it, and the ratio is the median of the rounds', with its spread.
 */
async function analysis(): Promise<{ figures: Figure[]; details: Record<string, unknown> }> {
  const modelPath = loadConfig().embeddingModelPath;
  if (!modelPath)
    throw new Error(
      'no image embedder: run installer/models/build-models.sh (.ci/run does) or set EMBEDDING_MODEL_PATH',
    );
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: THREADS,
  });
  process.stderr.write(`generating ${IMAGES} JPEGs into a ZIP…\n`);
  const zipPath = join(work, 'bench.zip');
  const jpegs = await buildZip(zipPath, IMAGES);

  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const { child, base } = await startControlPlane('control-plane', { databaseName: database, dataDir });
  try {
    const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
    const { username: owner } = await api<{ username: string }>(base, key, 'GET', '/api/account/summary');
    const slugs = Array.from({ length: ROUNDS }, (_, round) => `bench-${round + 1}`);
    for (const slug of slugs) {
      process.stderr.write(`ingesting ${slug} (not timed)…\n`);
      await ingestedDataset(base, key, owner, zipPath, { dataset: slug, name: slug });
    }
    process.stderr.write(`ceiling: the model bare on ${THREADS} thread(s)…\n`);
    const ceilings = [await ceiling(session, jpegs)];
    const rounds: Array<{ seconds: number; layoutSeconds: number }> = [];
    for (const [round, slug] of slugs.entries()) {
      process.stderr.write(`round ${round + 1}/${ROUNDS}: analysis of ${slug}…\n`);
      rounds.push(await analysed(base, key, owner, slug));
      process.stderr.write('ceiling again…\n');
      ceilings.push(await ceiling(session, jpegs));
    }
    const rates = rounds.map(({ seconds }) => IMAGES / seconds);
    const roundCeilings = rates.map((_, round) => (ceilings[round]! + ceilings[round + 1]!) / 2);
    const { ratio, spread } = ratioOfRounds(rates.map((rate, round) => rate / roundCeilings[round]!));
    const embedded: Figure = {
      figure: `dataset analysis of ${IMAGES} JPEGs`,
      value: median(rates),
      unit: 'images/s',
      ceiling: median(roundCeilings),
      ratio,
      ...(spread !== undefined && { spread }),
      target: `ratio >= ${TARGET_RATIO * 100}%`,
      pass: ratio >= TARGET_RATIO,
    };
    const list = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ');
    console.log(`\ndataset analysis — ${IMAGES} JPEGs 640×480, ${cpus().length} cores, model ${modelPath}`);
    console.log(
      `ceiling (onnxruntime-node bare, ${THREADS} thread(s), batches of ${BATCH}): ${list(ceilings)} images/s, before and after each round`,
    );
    console.log(
      `analysis (request → completed): rounds ${list(rates)} images/s = ${(100 * ratio).toFixed(0)}% of the ceiling (median of ${ROUNDS} rounds, ${spreadText(spread)}; target ≥ ${TARGET_RATIO * 100}%) ${embedded.pass ? 'PASS' : 'FAIL'}`,
    );
    console.log(
      `  of which embedding ${list(rounds.map(({ seconds, layoutSeconds }) => IMAGES / (seconds - layoutSeconds)))} images/s, layout ${list(rounds.map(({ layoutSeconds }) => layoutSeconds))} s`,
    );
    return { figures: [embedded], details: { analysis: { rounds, ceilings, threads: THREADS } } };
  } finally {
    await stopChild(child);
    await session.release();
  }
}

function chosenParts(): Set<string> {
  const raw = process.env.BENCH_EMBED_PARTS;
  const chosen = raw ? raw.split(',').map((part) => part.trim()) : [...PARTS];
  const unknown = chosen.filter((part) => !(PARTS as readonly string[]).includes(part));
  if (unknown.length)
    throw new Error(`BENCH_EMBED_PARTS: unknown part ${unknown.join(', ')}; choose from ${PARTS.join(', ')}`);
  return new Set(chosen);
}

async function main(): Promise<void> {
  const parts = chosenParts();
  console.log(`bench:embed — ${[...parts].join(', ')}; ${cpus().length} cores`);
  const figures: Figure[] = [];
  const details: Record<string, unknown> = {};
  let vectors: ClusteredVectors | undefined;
  const generated = () => (vectors ??= new ClusteredVectors(DIMENSIONS, VECTOR_SEED));
  // The layout before the index: its thread's memory is given back before the index and its vectors take theirs.
  const runs = {
    analysis,
    layout: () => layout(generated(), LAYOUT_POINTS),
    similar: () => similar(generated(), VECTORS, QUERIES, EXACT_QUERIES),
  };
  for (const part of PARTS) {
    if (!parts.has(part)) continue;
    const result = await runs[part]();
    figures.push(...result.figures);
    Object.assign(details, result.details);
  }
  recordResult('embed', figures, details);
}

await runBenchmark('bench:embed', main, async () => {
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
