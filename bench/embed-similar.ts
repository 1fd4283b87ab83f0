// bench:embed, the similar-image query: the control plane's own index (newIndex) over generated vectors, against exact search.
import { performance } from 'node:perf_hooks';
import usearch, { type Matches } from 'usearch';
import { newIndex } from '../control-plane/src/embeddings/vector-index.ts';
import type { ClusteredVectors } from './clustered-vectors.ts';
import type { Figure } from './lib.ts';

const TARGET_P95_MS = 50;
const TARGET_RECALL = 0.95;
/** Neighbours compared: a similar-images page. */
const K = 10;
/** Rows generated and added to the index at a time (usearch adds them on all cores). */
const BATCH = 10_000;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** The exact top K of one query over every chunk, one thread, as keys (row numbers). */
function exactTop(chunks: Float32Array[], query: Float32Array, dims: number): bigint[] {
  const found: Array<{ key: bigint; distance: number }> = [];
  chunks.forEach((chunk, c) => {
    const { keys, distances } = usearch.exactSearch(
      chunk,
      query,
      dims,
      Math.min(K, chunk.length / dims),
      usearch.MetricKind.IP,
      1,
    ) as Matches;
    keys.forEach((key, i) => found.push({ key: key + BigInt(c * BATCH), distance: distances[i] }));
  });
  return found
    .sort((a, b) => a.distance - b.distance)
    .slice(0, K)
    .map(({ key }) => key);
}

/**
 * `count` rows added to a new index in batches (the build timed), then `queries` held-out queries searched one at a
 * time for K neighbours on one thread, as a request does; the first `exactQueries` of them also searched exactly
 * (brute force over every row, usearch's exactSearch on one thread): its time per query is the ceiling, and its top K
 * the truth for recall@K.
 */
export async function similar(
  vectors: ClusteredVectors,
  count: number,
  queries: number,
  exactQueries: number,
): Promise<{ figures: Figure[]; details: Record<string, unknown> }> {
  const { dims } = vectors;
  const index = await newIndex(dims);
  const chunks: Float32Array[] = [];
  process.stderr.write(`similar: generating and adding ${count} ${dims}-d vectors…\n`);
  let generating = 0;
  let adding = 0;
  let shown = 0;
  for (let first = 0; first < count; first += BATCH) {
    const rows = Math.min(BATCH, count - first);
    let started = performance.now();
    const chunk = vectors.rows(first, rows);
    generating += performance.now() - started;
    started = performance.now();
    index.add(
      BigUint64Array.from({ length: rows }, (_, i) => BigInt(first + i)),
      chunk,
    );
    adding += performance.now() - started;
    chunks.push(chunk);
    const percent = Math.floor(((first + rows) * 100) / count);
    if (percent >= shown + 5 || first + rows === count) {
      shown = percent;
      process.stderr.write(`  ${first + rows} added (${percent}%), build ${(adding / 1000).toFixed(0)} s\n`);
    }
  }
  const rss = process.memoryUsage.rss();
  const rssGiB = rss / 2 ** 30;
  const keptGiB = (count * dims * Float32Array.BYTES_PER_ELEMENT) / 2 ** 30;

  const queryVectors = Array.from({ length: queries }, (_, n) => vectors.query(n, count));
  const times: number[] = [];
  const found: bigint[][] = [];
  for (const query of queryVectors) {
    const started = performance.now();
    const { keys } = index.search(query, K, 1) as Matches;
    times.push(performance.now() - started);
    found.push([...keys]);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p95 = percentile(sorted, 95);

  const exactCount = Math.min(exactQueries, queries);
  process.stderr.write(`similar: exact search of ${exactCount} queries…\n`);
  let exactMs = 0;
  let hits = 0;
  for (let n = 0; n < exactCount; n++) {
    const started = performance.now();
    const truth = exactTop(chunks, queryVectors[n], dims);
    exactMs += performance.now() - started;
    const kept = new Set(found[n]);
    hits += truth.filter((key) => kept.has(key)).length / truth.length;
  }
  const exactPerQuery = exactMs / exactCount;
  const recall = hits / exactCount;

  console.log(
    `\nsimilar-image query — ${count} vectors of ${dims} dimensions (clustered, L2-normalised), the control plane's index (usearch HNSW, f16, inner product)`,
  );
  console.log(
    `build: ${(adding / 1000).toFixed(1)} s adding in batches of ${BATCH} (generating: ${(generating / 1000).toFixed(1)} s); RSS after the build ${rssGiB.toFixed(2)} GiB, of which ${keptGiB.toFixed(2)} GiB the f32 vectors kept for exact search`,
  );
  console.log(`ceiling (exact search, one thread, ${exactCount} queries): ${exactPerQuery.toFixed(1)} ms per query`);
  console.log(
    `index (${queries} held-out queries, one at a time, one thread, top ${K}): p50 ${p50.toFixed(2)} ms, p95 ${p95.toFixed(2)} ms = ${((100 * p95) / exactPerQuery).toFixed(2)}% of the exact time (target p95 < ${TARGET_P95_MS} ms) ${p95 < TARGET_P95_MS ? 'PASS' : 'FAIL'}`,
  );
  console.log(
    `recall@${K} against exact search (first ${exactCount} queries): ${recall.toFixed(4)} (target ≥ ${TARGET_RECALL}) ${recall >= TARGET_RECALL ? 'PASS' : 'FAIL'}`,
  );
  return {
    figures: [
      {
        figure: `similar-image query at ${count} vectors, p95`,
        value: p95,
        unit: 'ms',
        ceiling: exactPerQuery,
        ratio: p95 / exactPerQuery,
        target: `< ${TARGET_P95_MS} ms`,
        pass: p95 < TARGET_P95_MS,
      },
      {
        figure: `similar-image query at ${count} vectors, recall@${K} (${exactCount} queries)`,
        value: recall,
        unit: '',
        target: `>= ${TARGET_RECALL}`,
        pass: recall >= TARGET_RECALL,
      },
    ],
    details: {
      similar: {
        vectors: count,
        dims,
        buildSeconds: adding / 1000,
        generateSeconds: generating / 1000,
        rssBytesAfterBuild: rss,
        queries,
        p50Ms: p50,
        p95Ms: p95,
        exactQueries: exactCount,
        exactMsPerQuery: exactPerQuery,
        recall,
      },
    },
  };
}
