// The 2-D layout's thread: umap-js runs synchronously (its neighbour search alone takes minutes at 50,000 images), so it
// runs here, off the control plane's event loop, with a seeded random source so the same vectors give the same layout.
import { parentPort, workerData } from 'node:worker_threads';
import { UMAP } from 'umap-js';
import { islands } from './islands.ts';
import type { LayoutReply, LayoutSetup } from './layout.messages.ts';
import { seeded } from './seeded-random.ts';

const { vectors, dims, seed } = workerData as LayoutSetup;
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
parentPort!.postMessage({ kind: 'done', xy, islands: ranks } satisfies LayoutReply, [
  xy.buffer as ArrayBuffer,
  ranks.buffer as ArrayBuffer,
]);
