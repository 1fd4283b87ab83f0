// The 2-D layout's thread: umap-js runs synchronously (its neighbour search alone takes minutes at 50,000 images), so it
// runs here, off the control plane's event loop, with a seeded random source so the same vectors give the same layout.
// A dataset larger than one layout is laid out from a sample; the thread then keeps an index of the sample's vectors and
// places the other images, sent in batches, beside their nearest sampled neighbours (see place).
import { parentPort, workerData } from 'node:worker_threads';
import { UMAP } from 'umap-js';
import { islands } from './islands.ts';
import type { LayoutReply, LayoutSetup, PlaceRequest } from './layout.messages.ts';
import { seeded } from './seeded-random.ts';

/** Sampled neighbours a placed image is put among. */
const PLACE_NEIGHBOURS = 5;

const { vectors, dims, seed, placing } = workerData as LayoutSetup;
const count = vectors.length / dims;

function layout(): Float32Array {
  const xy = new Float32Array(count * 2);
  // UMAP needs more points than neighbours; two or fewer are simply placed side by side.
  if (count < 3) {
    for (let i = 0; i < count; i++) xy[2 * i] = i;
    return xy;
  }
  const umap = new UMAP({ nComponents: 2, nNeighbors: Math.min(15, count - 1), random: seeded(seed) });
  // Row views over the one buffer: umap-js only indexes its rows.
  const rows = Array.from(
    { length: count },
    (_, i) => vectors.subarray(i * dims, (i + 1) * dims) as unknown as number[],
  );
  const epochs = umap.initializeFit(rows);
  let reported = -1;
  for (let epoch = 0; epoch < epochs; epoch++) {
    umap.step();
    const percent = Math.floor((epoch * 100) / epochs);
    if (percent !== reported) {
      parentPort!.postMessage({ kind: 'progress', percent } satisfies LayoutReply);
      reported = percent;
    }
  }
  umap.getEmbedding().forEach(([x, y], i) => {
    xy[2 * i] = x;
    xy[2 * i + 1] = y;
  });
  return xy;
}

const xy = layout();
const ranks = islands(xy);
if (placing) {
  // Copies: the layout's own arrays go to the job below.
  await placeOnRequest(xy.slice(), ranks.slice());
}
parentPort!.postMessage({ kind: 'done', xy, islands: ranks } satisfies LayoutReply, [
  xy.buffer as ArrayBuffer,
  ranks.buffer as ArrayBuffer,
]);

/**
 * Indexes the sample's vectors (usearch HNSW, inner product: they are unit vectors), then answers each PlaceRequest:
 * an image goes on its nearest sampled neighbour's island, at the mean place of those of its PLACE_NEIGHBOURS nearest
 * on that island, each weighted by closeness (an image equal to a sampled one lands on it).
 */
async function placeOnRequest(sampleXy: Float32Array, sampleIslands: Int32Array): Promise<void> {
  const usearch = (await import('usearch')).default;
  const index = new usearch.Index({
    dimensions: dims,
    metric: usearch.MetricKind.IP,
    quantization: usearch.ScalarKind.F32,
    connectivity: 16,
    expansion_add: 128,
    expansion_search: 64,
    multi: false,
  });
  // One thread: the control plane's event loop keeps the other cores.
  index.add(
    BigUint64Array.from({ length: count }, (_, i) => BigInt(i)),
    vectors,
    1,
  );
  const wanted = Math.min(PLACE_NEIGHBOURS, count);
  parentPort!.on('message', ({ vectors: batch }: PlaceRequest) => {
    const n = batch.length / dims;
    const placedXy = new Float32Array(n * 2);
    const placedIslands = new Int32Array(n);
    // A flat batch is searched whole; a batch of one is answered as a single query's Matches (no counts).
    const found = index.search(batch, wanted, 1) as {
      keys: BigUint64Array;
      distances: Float32Array;
      counts?: BigUint64Array;
    };
    for (let i = 0; i < n; i++) {
      const nearest = Number(found.keys[i * wanted]);
      const island = sampleIslands[nearest];
      let [x, y, total] = [0, 0, 0];
      const neighbours = found.counts ? Number(found.counts[i]) : found.keys.length;
      for (let k = 0; k < Math.min(wanted, neighbours); k++) {
        const neighbour = Number(found.keys[i * wanted + k]);
        if (sampleIslands[neighbour] !== island || (island < 0 && k > 0)) continue;
        // distance is 1 - cosine similarity: 0 for an equal vector.
        const weight = 1 / (Math.max(0, found.distances[i * wanted + k]) + 1e-4);
        x += weight * sampleXy[2 * neighbour];
        y += weight * sampleXy[2 * neighbour + 1];
        total += weight;
      }
      placedXy[2 * i] = x / total;
      placedXy[2 * i + 1] = y / total;
      placedIslands[i] = island;
    }
    parentPort!.postMessage({ kind: 'placed', xy: placedXy, islands: placedIslands } satisfies LayoutReply, [
      placedXy.buffer as ArrayBuffer,
      placedIslands.buffer as ArrayBuffer,
    ]);
  });
}
