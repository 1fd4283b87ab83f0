// usearch HNSW from Node: build time, memory, single-query latency (p50/p95) and recall@10 against exact search.
// Usage: node ann-bench.mjs N D KIND QUANT CONNECTIVITY EXPANSION_ADD EF1,EF2,...   KIND: lowrank | iso
//   lowrank: x = relu(A z) + noise, z from 1000 clusters in 64 latent dims (non-negative like pooled CNN features);
//   iso: isotropic Gaussian mixture (1000 clusters), the hard case. Queries: 1000 fresh draws, not in the index.
import { statSync } from 'node:fs';
import usearch from 'usearch';

const [N, D] = process.argv.slice(2, 4).map(Number);
const [kind = 'lowrank', quant = 'f16', conn = '16', efAdd = '128', efs = '16,32,64,128'] = process.argv.slice(4);
const Q = 1000, K = 10, R = 64, C = 1000, file = `/tmp/i20/ann-${N}-${D}-${kind}-${quant}-${conn}.usearch`;
let seed = 7; const rnd = () => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32);
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const A = Float32Array.from({ length: D * R }, () => gauss() / Math.sqrt(R));
const centers = Float32Array.from({ length: C * (kind === 'iso' ? D : R) }, gauss);
function fill(out, n) {
  const z = new Float32Array(R);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(rnd() * C), row = out.subarray(i * D, (i + 1) * D);
    if (kind === 'iso') for (let j = 0; j < D; j++) row[j] = centers[c * D + j] + 0.6 * gauss();
    else {
      for (let r = 0; r < R; r++) z[r] = centers[c * R + r] + 0.7 * gauss();
      for (let j = 0; j < D; j++) { let s = 0; for (let r = 0; r < R; r++) s += A[j * R + r] * z[r]; row[j] = Math.max(0, s) + 0.05 * Math.abs(gauss()); }
    }
    let norm = 0; for (let j = 0; j < D; j++) norm += row[j] * row[j];
    norm = Math.sqrt(norm); for (let j = 0; j < D; j++) row[j] /= norm;
  }
  return out;
}
const log = (o) => console.log(JSON.stringify(o));
let t = performance.now();
const data = fill(new Float32Array(N * D), N), queries = fill(new Float32Array(Q * D), Q);
log({ step: 'generate', s: +((performance.now() - t) / 1000).toFixed(1) });
t = performance.now();
const exact = usearch.exactSearch(data, queries, D, K, 'ip', 2);
log({ step: 'exact 1000 queries', s: +((performance.now() - t) / 1000).toFixed(1) });
t = performance.now();
const config = { dimensions: D, metric: 'ip', quantization: quant, connectivity: Number(conn), expansion_add: Number(efAdd) };
const built = new usearch.Index({ ...config, expansion_search: 64 });
const keys = BigUint64Array.from({ length: N }, (_, i) => BigInt(i));
built.add(keys, data, 2);
const buildS = (performance.now() - t) / 1000;
built.save(file);
log({ step: 'build', N, D, kind, quant, conn: Number(conn), efAdd: Number(efAdd), s: +buildS.toFixed(1), perSec: Math.round(N / buildS), fileMB: Math.round(statSync(file).size / 2 ** 20), rssMB: Math.round(process.memoryUsage().rss / 2 ** 20) });
for (const ef of efs.split(',').map(Number)) {
  const index = new usearch.Index({ ...config, expansion_search: ef });
  index.load(file);
  const ms = [];
  let hits = 0;
  for (let q = 0; q < Q; q++) {
    const v = queries.subarray(q * D, (q + 1) * D);
    const t0 = performance.now();
    const r = index.search(v, K, 1);
    ms.push(performance.now() - t0);
    const truth = new Set(exact.keys.subarray(q * K, (q + 1) * K));
    for (const k of r.keys) if (truth.has(k)) hits++;
  }
  ms.sort((a, b) => a - b);
  log({ ef, recallAt10: +(hits / (Q * K)).toFixed(4), p50ms: +ms[Q / 2].toFixed(2), p95ms: +ms[Math.floor(Q * 0.95)].toFixed(2), p99ms: +ms[Math.floor(Q * 0.99)].toFixed(2) });
}
