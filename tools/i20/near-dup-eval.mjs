// Near-duplicate retrieval with the exported image embedder: index = base images + distractors, queries = edited
// copies of each base (crop, flip, colour jitter, JPEG re-encode, all combined, grey+rotate); recall@k = base in top k.
// Usage: node near-dup-eval.mjs MODEL.onnx BASE_DIR DISTRACT_DIR [squash|crop|thumb] [threads]
// thumb: no model, a 16x16 grey thumbnail (mean removed, L2-normalised) as the baseline the model must beat.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import ort from 'onnxruntime-node';
import sharp from 'sharp';

const [modelPath, baseDir, distractDir, mode = 'squash', threads = '1'] = process.argv.slice(2);
const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const S = 224;

/** RGB 224x224 float tensor, ImageNet normalisation; 'squash' resizes the whole image, 'crop' = short side 256 + centre 224. */
async function tensorOf(input) {
  let img = sharp(input).rotate().removeAlpha().toColourspace('srgb');
  img = mode === 'crop' ? sharp(await img.resize(256, 256, { fit: 'outside' }).toBuffer()).resize(S, S, { fit: 'cover' }) : img.resize(S, S, { fit: 'fill' });
  const { data } = await img.raw().toBuffer({ resolveWithObject: true });
  const t = new Float32Array(3 * S * S);
  for (let i = 0; i < S * S; i++) for (let c = 0; c < 3; c++) t[c * S * S + i] = (data[i * 3 + c] / 255 - MEAN[c]) / STD[c];
  return t;
}

const edits = {
  crop: async (b) => { const m = await sharp(b).metadata(); return sharp(b).extract({ left: Math.round(m.width * 0.1), top: Math.round(m.height * 0.15), width: Math.round(m.width * 0.75), height: Math.round(m.height * 0.75) }).png().toBuffer(); },
  flip: (b) => sharp(b).flop().png().toBuffer(),
  jitter: (b) => sharp(b).removeAlpha().modulate({ brightness: 1.25, saturation: 1.5, hue: 20 }).linear(1.15, -10).png().toBuffer(),
  jpeg: async (b) => { const m = await sharp(b).metadata(); return sharp(b).resize(Math.round(m.width / 2)).jpeg({ quality: 20 }).toBuffer(); },
  combo: async (b) => { const m = await sharp(b).metadata(); const c = await sharp(b).extract({ left: Math.round(m.width * 0.05), top: Math.round(m.height * 0.1), width: Math.round(m.width * 0.85), height: Math.round(m.height * 0.85) }).toBuffer(); return sharp(c).flop().removeAlpha().modulate({ brightness: 0.85, saturation: 1.3, hue: -15 }).resize(Math.round(m.width * 0.6)).jpeg({ quality: 40 }).toBuffer(); },
  greyrot: (b) => sharp(b).removeAlpha().rotate(8, { background: '#808080' }).grayscale().toColourspace('srgb').png().toBuffer(),
};

const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: Number(threads), graphOptimizationLevel: 'all' });
const runMs = [];
const prepMs = [];
async function thumb(input) {
  const { data } = await sharp(input).rotate().removeAlpha().grayscale().resize(16, 16, { fit: 'fill' }).raw().toBuffer({ resolveWithObject: true });
  const mean = data.reduce((a, b) => a + b, 0) / data.length;
  const v = Float32Array.from(data, (x) => x - mean);
  const norm = Math.hypot(...v) || 1;
  return v.map((x) => x / norm);
}
async function embed(input) {
  if (mode === 'thumb') return thumb(input);
  const t0 = performance.now();
  const t = await tensorOf(input);
  const t1 = performance.now();
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', t, [1, 3, S, S]) });
  runMs.push(performance.now() - t1);
  prepMs.push(t1 - t0);
  return out[session.outputNames[0]].data;
}
const files = async (dir) => (await readdir(dir)).sort().map((f) => join(dir, f));
const bases = await files(baseDir);
const distract = distractDir ? await files(distractDir) : [];
const index = [];
for (const f of [...bases, ...distract]) index.push({ f, v: await embed(f) });
const dot = (a, b) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[i]; return s; };
const stats = {};
for (let bi = 0; bi < bases.length; bi++) {
  const src = await sharp(bases[bi]).png().toBuffer();
  for (const [name, edit] of Object.entries(edits)) {
    const q = await embed(await edit(src));
    const ranked = index.map((e, i) => [dot(q, e.v), i]).sort((a, b) => b[0] - a[0]);
    const rank = ranked.findIndex(([, i]) => i === bi);
    const s = (stats[name] ??= { n: 0, r1: 0, r3: 0, misses: [] });
    s.n++; if (rank < 1) s.r1++; if (rank < 3) s.r3++; else s.misses.push(`${bases[bi].split('/').pop()}->${index[ranked[0][1]].f.split('/').pop()}`);
  }
}
const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1); };
let n = 0, r1 = 0, r3 = 0;
for (const [name, s] of Object.entries(stats)) { n += s.n; r1 += s.r1; r3 += s.r3; console.log(`${name.padEnd(8)} recall@1 ${(s.r1 / s.n).toFixed(3)} recall@3 ${(s.r3 / s.n).toFixed(3)} misses@3: ${s.misses.join(' ')}`); }
console.log(JSON.stringify({ mode, threads: Number(threads), bases: bases.length, indexSize: index.length, queries: n, recall1: +(r1 / n).toFixed(3), recall3: +(r3 / n).toFixed(3), dims: index[0].v.length, ...(runMs.length ? { runMsP50: pct(runMs, 0.5), runMsP95: pct(runMs, 0.95), prepMsP50: pct(prepMs, 0.5) } : {}) }));
