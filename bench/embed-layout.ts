// bench:embed, the clustering: the analysis job's layout stage (computeLayout: umap-js and islands on a thread of its own).
import { performance } from 'node:perf_hooks';
import { LAYOUT_SEED } from '../control-plane/src/embeddings/embedding.job.ts';
import { computeLayout } from '../control-plane/src/embeddings/layout.ts';
import type { ClusteredVectors } from './clustered-vectors.ts';
import type { Figure } from './lib.ts';

/** The first `points` generated vectors laid out as the analysis job lays a dataset out; timed from the call to its answer. */
export async function layout(
  vectors: ClusteredVectors,
  points: number,
): Promise<{ figures: Figure[]; details: Record<string, unknown> }> {
  const input = vectors.rows(0, points);
  process.stderr.write(`layout: ${points} ${vectors.dims}-d vectors…\n`);
  let shown = -10;
  const progress = (percent: number) => {
    if (percent >= shown + 10) process.stderr.write(`  layout ${(shown = percent)}%\n`);
  };
  const started = performance.now();
  const { islands } = await computeLayout(input, vectors.dims, {
    seed: LAYOUT_SEED,
    signal: new AbortController().signal,
    progress,
  });
  const seconds = (performance.now() - started) / 1000;
  const islandCount = new Set(islands.filter((rank) => rank >= 0)).size;
  console.log(
    `\nclustering — ${points} vectors of ${vectors.dims} dimensions, the analysis job's layout (UMAP on its own thread, then islands): ${seconds.toFixed(1)} s, ${islandCount} islands`,
  );
  return {
    figures: [{ figure: `clustering of ${points} vectors (UMAP layout + islands)`, value: seconds, unit: 's' }],
    details: { layout: { points, dims: vectors.dims, seconds, islands: islandCount } },
  };
}
