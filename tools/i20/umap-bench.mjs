// umap-js on N clustered D-dim unit vectors, 2-D output: its own NN-descent kNN, or (KNN=usearch) the 15 nearest
// neighbours from a usearch HNSW index handed over with setPrecomputedKNN. Usage: [KNN=usearch] node umap-bench.mjs N D
import { UMAP } from 'umap-js';
import usearch from 'usearch';

const [N, D] = process.argv.slice(2).map(Number);
const useIndex = process.env.KNN === 'usearch';
const K = 15;
let seed = 42; const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const centers = Array.from({ length: 50 }, () => Float32Array.from({ length: D }, gauss));
const flat = new Float32Array(N * D);
for (let i = 0; i < N; i++) {
  const row = flat.subarray(i * D, (i + 1) * D), c = centers[i % 50];
  let n = 0; for (let j = 0; j < D; j++) { row[j] = c[j] + 0.5 * gauss(); n += row[j] * row[j]; }
  n = Math.sqrt(n); for (let j = 0; j < D; j++) row[j] /= n;
}
const data = Array.from({ length: N }, (_, i) => flat.subarray(i * D, (i + 1) * D));
const t0 = performance.now();
const umap = new UMAP({ nComponents: 2, nNeighbors: K, minDist: 0.1, random: rnd });
let knnS = 0;
if (useIndex) {
  const index = new usearch.Index({ dimensions: D, metric: 'cos', quantization: 'f16', connectivity: 16, expansion_add: 64, expansion_search: 64 });
  index.add(BigUint64Array.from({ length: N }, (_, i) => BigInt(i)), flat, 2);
  const r = index.search(flat, K, 2);
  const indices = [], distances = [];
  for (let i = 0; i < N; i++) {
    indices.push(Array.from(r.keys.subarray(i * K, (i + 1) * K), Number));
    distances.push(Array.from(r.distances.subarray(i * K, (i + 1) * K), (d) => Math.sqrt(2 * Math.max(0, d)))); // cosine distance -> euclidean on unit vectors
  }
  umap.setPrecomputedKNN(indices, distances);
  knnS = (performance.now() - t0) / 1000;
}
const nEpochs = umap.initializeFit(data);
const t1 = performance.now();
for (let e = 0; e < nEpochs; e++) umap.step();
const t2 = performance.now();
console.log(JSON.stringify({ N, D, knn: useIndex ? 'usearch' : 'nn-descent', nEpochs, knnS: +knnS.toFixed(1), initS: +((t1 - t0) / 1000 - knnS).toFixed(1), epochsS: +((t2 - t1) / 1000).toFixed(1), totalS: +((t2 - t0) / 1000).toFixed(1), rssMB: Math.round(process.memoryUsage().rss / 2 ** 20) }));
