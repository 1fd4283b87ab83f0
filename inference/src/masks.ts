// Segment masks as ultralytics makes them (ops.process_mask with upsample=True, then Masks.xy): coefficients × protos,
// bilinear upsampling to the model input (F.interpolate, align_corners=False), > 0, cropped to the box; then the outer
// contours (cv2.findContours RETR_EXTERNAL + CHAIN_APPROX_SIMPLE, Suzuki–Abe border following), merged into one
// polygon when there are several (data/converter.merge_multi_segment), scaled back to the original image.
import type { Detections } from './nms.ts';
import { type Scaler, scaleX, scaleY } from './scale.ts';

interface MaskInput extends Detections {
  extras: Float32Array;
  extraCount: number;
}

/** One polygon [x1, y1, …] per detection in original-image pixels; null where the mask is empty. */
export function maskPolygons(
  detections: MaskInput,
  protos: Float32Array,
  dims: number[],
  input: [number, number],
  s: Scaler,
): (number[] | null)[] {
  const [, channels, mh, mw] = dims;
  const [height, width] = input;
  const plane = mh * mw;
  const n = detections.scores.length;
  const lowRes = new Float32Array(plane);
  const mask = new Uint8Array(height * width);
  const scaleH = mh / height;
  const scaleW = mw / width;
  // Source columns and weights for F.interpolate's bilinear, align_corners=False.
  const xTaps = taps(width, mw, scaleW);
  const yTaps = taps(height, mh, scaleH);
  const out: (number[] | null)[] = [];
  for (let k = 0; k < n; k++) {
    const coefficients = detections.extras.subarray(k * detections.extraCount, k * detections.extraCount + channels);
    lowRes.fill(0);
    for (let c = 0; c < channels; c++) {
      const weight = coefficients[c];
      const proto = protos.subarray(c * plane, (c + 1) * plane);
      for (let p = 0; p < plane; p++) lowRes[p] += weight * proto[p];
    }
    mask.fill(0);
    const [x1, y1, x2, y2] = detections.boxes.subarray(k * 4, k * 4 + 4);
    // crop_mask keeps columns r with x1 <= r < x2 and rows c with y1 <= c < y2.
    const colStart = Math.max(0, Math.ceil(x1));
    const colEnd = Math.min(width, Math.ceil(x2));
    const rowStart = Math.max(0, Math.ceil(y1));
    const rowEnd = Math.min(height, Math.ceil(y2));
    let any = false;
    for (let y = rowStart; y < rowEnd; y++) {
      const y0 = yTaps.index[y * 2];
      const y1i = yTaps.index[y * 2 + 1];
      const wy0 = yTaps.weight[y * 2];
      const wy1 = yTaps.weight[y * 2 + 1];
      for (let x = colStart; x < colEnd; x++) {
        const x0 = xTaps.index[x * 2];
        const x1i = xTaps.index[x * 2 + 1];
        const wx0 = xTaps.weight[x * 2];
        const wx1 = xTaps.weight[x * 2 + 1];
        const value =
          wy0 * (wx0 * lowRes[y0 * mw + x0] + wx1 * lowRes[y0 * mw + x1i]) +
          wy1 * (wx0 * lowRes[y1i * mw + x0] + wx1 * lowRes[y1i * mw + x1i]);
        if (value > 0) {
          mask[y * width + x] = 1;
          any = true;
        }
      }
    }
    if (!any) {
      out.push(null);
      continue;
    }
    const contours = findExternalContours(mask, width, height);
    const merged = contours.length > 1 ? mergeMultiSegment(contours) : (contours[0] ?? []);
    const polygon: number[] = [];
    for (let p = 0; p < merged.length; p += 2) polygon.push(scaleX(s, merged[p]), scaleY(s, merged[p + 1]));
    out.push(polygon);
  }
  return out;
}

/** PyTorch's upsample_bilinear2d source indices and weights (align_corners=False) for each output position. */
function taps(outSize: number, inSize: number, scale: number) {
  const index = new Int32Array(outSize * 2);
  const weight = new Float64Array(outSize * 2);
  for (let d = 0; d < outSize; d++) {
    const src = Math.max(Math.fround(Math.fround(scale * (d + 0.5)) - 0.5), 0);
    const i0 = Math.floor(src);
    const step = i0 < inSize - 1 ? 1 : 0;
    const lambda1 = Math.fround(src - i0);
    index[d * 2] = i0;
    index[d * 2 + 1] = i0 + step;
    weight[d * 2] = Math.fround(1 - lambda1);
    weight[d * 2 + 1] = lambda1;
  }
  return { index, weight };
}

// Chain-code directions as OpenCV numbers them: 0 = +x, counter-clockwise with y pointing down.
const DX = [1, 1, 0, -1, -1, -1, 0, 1];
const DY = [0, -1, -1, -1, 0, 1, 1, 1];

/**
 * cv2.findContours(mask, RETR_EXTERNAL, CHAIN_APPROX_SIMPLE): outer borders of regions not inside another region's
 * hole, as flat [x, y, …] lists of the points where the chain changes direction, in OpenCV's order (last found first).
 */
export function findExternalContours(mask: Uint8Array, width: number, height: number): number[][] {
  const w = width + 2;
  const h = height + 2;
  const img = new Int8Array(w * h);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) if (mask[y * width + x]) img[(y + 1) * w + x + 1] = 1;
  const deltas = new Int32Array(16);
  for (let s = 0; s < 8; s++) deltas[s] = deltas[s + 8] = DY[s] * w + DX[s];
  const contours: number[][] = [];
  for (let y = 1; y < h - 1; y++) {
    let prev = 0;
    let lnbd = y * w; // the last border pixel met on this row (starts at the frame)
    for (let x = 1; x < w - 1; x++) {
      const at = y * w + x;
      const p = img[at];
      if (p !== prev) {
        // An outer border starts where 0 is followed by an unvisited 1; RETR_EXTERNAL skips holes and anything whose
        // last border on the left is the inside edge of another region.
        if (prev === 0 && p === 1 && !(img[lnbd] > 0)) contours.push(traceBorder(img, at, x - 1, y - 1, deltas));
        const now = img[at];
        if (now !== 0 && now !== 1) lnbd = at;
        prev = now;
      }
    }
  }
  return contours.reverse();
}

/** icvFetchContour: follows one outer border from `start`, marking it, keeping the points where the direction changes. */
function traceBorder(img: Int8Array, start: number, x: number, y: number, deltas: Int32Array): number[] {
  const points: number[] = [];
  const NBD = 2;
  const RIGHT = NBD | -128;
  let s = 4;
  let i1 = 0;
  do {
    s = (s - 1) & 7;
    i1 = start + deltas[s];
  } while (img[i1] === 0 && s !== 4);
  if (s === 4 && img[i1] === 0) {
    img[start] = RIGHT;
    return [x, y];
  }
  let i3 = start;
  let prevS = s ^ 4;
  for (;;) {
    const sEnd = s;
    let i4 = 0;
    while (s < 15) {
      i4 = i3 + deltas[++s];
      if (img[i4] !== 0) break;
    }
    s &= 7;
    if ((s - 1) >>> 0 < sEnd >>> 0) img[i3] = RIGHT;
    else if (img[i3] === 1) img[i3] = NBD;
    if (s !== prevS) {
      points.push(x, y);
      prevS = s;
    }
    x += DX[s];
    y += DY[s];
    if (i4 === start && i3 === i1) break;
    i3 = i4;
    s = (s + 4) & 7;
  }
  return points;
}

/** data/converter.merge_multi_segment: joins several contours into one polygon through their closest points. */
export function mergeMultiSegment(contours: number[][]): number[] {
  let segments = contours.map((flat) =>
    Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]]),
  );
  const idxList: number[][] = segments.map(() => []);
  for (let i = 1; i < segments.length; i++) {
    const [a, b] = closestPair(segments[i - 1], segments[i]);
    idxList[i - 1].push(a);
    idxList[i].push(b);
  }
  const out: number[][][] = [];
  const last = idxList.length - 1;
  segments = segments.slice();
  for (let i = 0; i <= last; i++) {
    let idx = idxList[i];
    if (idx.length === 2 && idx[0] > idx[1]) {
      idx = idx.map((v) => segments[i].length - 1 - v);
      segments[i] = segments[i].slice().reverse();
    }
    const shift = idx[0] % segments[i].length;
    const rolled = segments[i].slice(shift).concat(segments[i].slice(0, shift));
    segments[i] = rolled.concat([rolled[0]]);
    if (i === 0 || i === last) out.push(segments[i]);
    else out.push(segments[i].slice(0, idx[1] - idx[0] + 1));
  }
  for (let i = last; i >= 0; i--) {
    if (i !== 0 && i !== last) {
      const idx = idxList[i];
      out.push(segments[i].slice(Math.abs(idx[1] - idx[0])));
    }
  }
  return out.flat(2);
}

/** utils min_index: the first pair (row-major) of points at the smallest squared distance. */
function closestPair(a: number[][], b: number[][]): [number, number] {
  let best = Infinity;
  let pair: [number, number] = [0, 0];
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < b.length; j++) {
      const d = (a[i][0] - b[j][0]) ** 2 + (a[i][1] - b[j][1]) ** 2;
      if (d < best) {
        best = d;
        pair = [i, j];
      }
    }
  }
  return pair;
}
