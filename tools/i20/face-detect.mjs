// CenterFace (face-detector.onnx) from Node: resize so the long side is at most MAX (both sides multiples of 32), raw
// 0-255 RGB planes in, heatmap > threshold, boxes from exp(scale)*4 around the stride-4 centre + offset, NMS at IoU 0.3.
// Usage: node face-detect.mjs MODEL.onnx OUT_DIR IMAGE... (writes OUT_DIR/<name>.png with the boxes drawn)
import { basename } from 'node:path';
import ort from 'onnxruntime-node';
import sharp from 'sharp';

const [modelPath, outDir, ...images] = process.argv.slice(2);
const MAX = Number(process.env.MAX ?? 640);
const THRESHOLD = Number(process.env.THRESHOLD ?? 0.5);
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });

export async function detect(input) {
  const meta = await sharp(input).rotate().metadata();
  const [w0, h0] = meta.orientation >= 5 ? [meta.height, meta.width] : [meta.width, meta.height];
  const k = Math.min(1, MAX / Math.max(w0, h0));
  const w = Math.max(32, Math.round((w0 * k) / 32) * 32), h = Math.max(32, Math.round((h0 * k) / 32) * 32);
  const { data } = await sharp(input).rotate().removeAlpha().toColourspace('srgb').resize(w, h, { fit: 'fill' }).raw().toBuffer({ resolveWithObject: true });
  const plane = w * h, t = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) t[c * plane + i] = data[i * 3 + c];
  const t0 = performance.now();
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', t, [1, 3, h, w]) });
  const ms = performance.now() - t0;
  const [heat, scale, offset] = session.outputNames.map((n) => out[n].data);
  const W = w / 4, H = h / 4, P = W * H, sx = w0 / w, sy = h0 / h;
  const boxes = [];
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
    const i = y * W + x, score = heat[i];
    if (score <= THRESHOLD) continue;
    const bh = Math.exp(scale[i]) * 4, bw = Math.exp(scale[P + i]) * 4;
    const x1 = Math.max(0, (x + offset[P + i] + 0.5) * 4 - bw / 2), y1 = Math.max(0, (y + offset[i] + 0.5) * 4 - bh / 2);
    boxes.push({ score, x1: x1 * sx, y1: y1 * sy, x2: Math.min(w, x1 + bw) * sx, y2: Math.min(h, y1 + bh) * sy });
  }
  boxes.sort((a, b) => b.score - a.score);
  const iou = (a, b) => { const iw = Math.max(0, Math.min(a.x2, b.x2) - Math.max(a.x1, b.x1)), ih = Math.max(0, Math.min(a.y2, b.y2) - Math.max(a.y1, b.y1)); const i = iw * ih; return i / ((a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - i); };
  const kept = [];
  for (const b of boxes) if (kept.every((k) => iou(k, b) < 0.3)) kept.push(b);
  return { width: w0, height: h0, inputW: w, inputH: h, ms, faces: kept };
}

for (const file of images) {
  const r = await detect(file);
  console.log(JSON.stringify({ file: basename(file), input: `${r.inputW}x${r.inputH}`, ms: +r.ms.toFixed(1), faces: r.faces.length, scores: r.faces.map((f) => +f.score.toFixed(2)) }));
  if (!outDir || outDir === '-') continue;
  const rects = r.faces.map((f) => `<rect x="${f.x1}" y="${f.y1}" width="${f.x2 - f.x1}" height="${f.y2 - f.y1}" fill="none" stroke="lime" stroke-width="${Math.max(2, r.width / 300)}"/>`).join('');
  const svg = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${r.width}" height="${r.height}">${rects}</svg>`);
  const drawn = await sharp(file).rotate().composite([{ input: svg }]).png().toBuffer();
  await sharp(drawn).resize({ width: Math.min(r.width, 900) }).png().toFile(`${outDir}/${basename(file).replace(/\.\w+$/, '')}.png`);
}
