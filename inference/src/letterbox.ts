// ultralytics' LetterBox + predictor preprocess in one pass: cv2.resize(INTER_LINEAR) reproduced bit for bit on the 8-bit
// pixels (OpenCV's fixed-point coefficients, INTER_RESIZE_COEF_BITS = 11, and its switch to INTER_AREA for an exact
// halving), padding with 114, then RGB → CHW float32 / 255 straight into the model's input tensor.
import type { DecodedImage } from './decode.ts';
import { pyRound } from './py-math.ts';

export interface Letterbox {
  /** The model input, 1 × 3 × height × width, values 0–1. */
  tensor: Float32Array;
  height: number;
  width: number;
}

/**
 * LetterBox.get_params: the resized size and the padding on each side, exactly as ultralytics computes them. `auto`:
 * pad only to a multiple of the stride; `stretch` (scale_fill, depth models): resize to the target, no padding.
 */
export function letterboxShape(
  imageHeight: number,
  imageWidth: number,
  target: [number, number],
  auto: boolean,
  stride: number,
  stretch = false,
) {
  if (stretch)
    return { unpadWidth: target[1], unpadHeight: target[0], top: 0, left: 0, height: target[0], width: target[1] };
  const r = Math.min(target[0] / imageHeight, target[1] / imageWidth);
  const unpadWidth = Math.max(pyRound(imageWidth * r), 1);
  const unpadHeight = Math.max(pyRound(imageHeight * r), 1);
  let dw = target[1] - unpadWidth;
  let dh = target[0] - unpadHeight;
  if (auto) {
    dw = ((dw % stride) + stride) % stride;
    dh = ((dh % stride) + stride) % stride;
  }
  dw /= 2;
  dh /= 2;
  const top = pyRound(dh - 0.1);
  const bottom = pyRound(dh + 0.1);
  const left = pyRound(dw - 0.1);
  const right = pyRound(dw + 0.1);
  return { unpadWidth, unpadHeight, top, left, height: unpadHeight + top + bottom, width: unpadWidth + left + right };
}

const UNIT = new Float32Array(256).map((_, value) => value / 255);
const PAD = UNIT[114];
const COEF_SCALE = 2048; // OpenCV's INTER_RESIZE_COEF_SCALE (1 << 11)

/** `reuse`: a tensor of an earlier call to write into when it has the right size (every value is written). */
export function letterbox(
  image: DecodedImage,
  target: [number, number],
  auto: boolean,
  stride: number,
  stretch = false,
  reuse?: Float32Array,
): Letterbox {
  const shape = letterboxShape(image.height, image.width, target, auto, stride, stretch);
  const { width, height, unpadWidth, unpadHeight, top, left } = shape;
  const plane = width * height;
  const tensor = reuse?.length === 3 * plane ? reuse : new Float32Array(3 * plane);
  // Padding only where the picture does not go: the rows above and below, the columns left and right of it.
  const right = left + unpadWidth;
  for (let c = 0; c < 3; c++) {
    const base = c * plane;
    tensor.fill(PAD, base, base + top * width);
    tensor.fill(PAD, base + (top + unpadHeight) * width, base + plane);
    if (left > 0 || right < width) {
      for (let y = top; y < top + unpadHeight; y++) {
        tensor.fill(PAD, base + y * width, base + y * width + left);
        tensor.fill(PAD, base + y * width + right, base + (y + 1) * width);
      }
    }
  }
  const g = plane;
  const b = 2 * plane;
  resizeLinear(image, unpadWidth, unpadHeight, (dy, row) => {
    let at = (top + dy) * width + left;
    const end = unpadWidth * 3;
    for (let k = 0; k < end; k += 3, at++) {
      tensor[at] = UNIT[row[k]];
      tensor[g + at] = UNIT[row[k + 1]];
      tensor[b + at] = UNIT[row[k + 2]];
    }
  });
  return { tensor, height, width };
}

/** cv2.resize(src, (dstWidth, dstHeight), INTER_LINEAR) on 8-bit, 3-channel pixels; hands each output row to `emit`. */
export function resizeLinear(
  image: DecodedImage,
  dstWidth: number,
  dstHeight: number,
  emit: (dy: number, row: Uint8Array) => void,
): void {
  const { width: srcWidth, height: srcHeight, data } = image;
  const stride = srcWidth * 3;
  const out = new Uint8Array(dstWidth * 3);
  if (srcWidth === dstWidth && srcHeight === dstHeight) {
    for (let y = 0; y < srcHeight; y++) emit(y, data.subarray(y * stride, (y + 1) * stride));
    return;
  }
  const scaleX = 1 / (dstWidth / srcWidth);
  const scaleY = 1 / (dstHeight / srcHeight);
  // OpenCV: an exact 2× downscale in both directions is done by INTER_AREA's fast path, (a + b + c + d + 2) >> 2.
  if (Math.abs(scaleX - 2) < Number.EPSILON && Math.abs(scaleY - 2) < Number.EPSILON) {
    for (let dy = 0; dy < dstHeight; dy++) {
      const row0 = 2 * dy * stride;
      const row1 = row0 + stride;
      const end = dstWidth * 3;
      for (let dx = 0, s0 = row0, s1 = row1; dx < end; dx += 3, s0 += 6, s1 += 6) {
        out[dx] = (data[s0] + data[s0 + 3] + data[s1] + data[s1 + 3] + 2) >> 2;
        out[dx + 1] = (data[s0 + 1] + data[s0 + 4] + data[s1 + 1] + data[s1 + 4] + 2) >> 2;
        out[dx + 2] = (data[s0 + 2] + data[s0 + 5] + data[s1 + 2] + data[s1 + 5] + 2) >> 2;
      }
      emit(dy, out);
    }
    return;
  }
  // Horizontal taps: source offset and two fixed-point weights per output column.
  const xofs = new Int32Array(dstWidth);
  const alpha = new Int32Array(dstWidth * 2);
  for (let dx = 0; dx < dstWidth; dx++) {
    let fx = Math.fround((dx + 0.5) * scaleX - 0.5);
    let sx = Math.floor(fx);
    fx = Math.fround(fx - sx);
    if (sx < 0) {
      fx = 0;
      sx = 0;
    }
    if (sx >= srcWidth - 1) {
      fx = 0;
      sx = srcWidth - 1;
    }
    xofs[dx] = sx * 3;
    alpha[dx * 2] = pyRound(Math.fround(Math.fround(1 - fx) * COEF_SCALE));
    alpha[dx * 2 + 1] = pyRound(Math.fround(fx * COEF_SCALE));
  }
  // Columns from xmax on read only their last source pixel (OpenCV's single-tap tail).
  let xmax = dstWidth;
  while (xmax > 0 && xofs[xmax - 1] >= (srcWidth - 1) * 3) xmax--;
  const rows = [new Int32Array(dstWidth * 3), new Int32Array(dstWidth * 3)];
  const rowOf = [-1, -1];
  const horizontal = (sy: number, into: Int32Array) => {
    const base = sy * stride;
    let dx = 0;
    for (let k = 0; dx < xmax; dx++, k += 3) {
      const sx = base + xofs[dx];
      const a0 = alpha[dx * 2];
      const a1 = alpha[dx * 2 + 1];
      into[k] = data[sx] * a0 + data[sx + 3] * a1;
      into[k + 1] = data[sx + 1] * a0 + data[sx + 4] * a1;
      into[k + 2] = data[sx + 2] * a0 + data[sx + 5] * a1;
    }
    for (let k = dx * 3; dx < dstWidth; dx++, k += 3) {
      const sx = base + xofs[dx];
      into[k] = data[sx] * COEF_SCALE;
      into[k + 1] = data[sx + 1] * COEF_SCALE;
      into[k + 2] = data[sx + 2] * COEF_SCALE;
    }
  };
  const row = (sy: number, slot: number): Int32Array => {
    if (rowOf[slot] === sy) return rows[slot];
    const other = 1 - slot;
    if (rowOf[other] === sy) {
      // Swap so the row computed for the previous output line is reused.
      [rows[0], rows[1]] = [rows[1], rows[0]];
      [rowOf[0], rowOf[1]] = [rowOf[1], rowOf[0]];
      return rows[slot];
    }
    horizontal(sy, rows[slot]);
    rowOf[slot] = sy;
    return rows[slot];
  };
  for (let dy = 0; dy < dstHeight; dy++) {
    let fy = Math.fround((dy + 0.5) * scaleY - 0.5);
    const sy = Math.floor(fy);
    fy = Math.fround(fy - sy);
    const b0 = pyRound(Math.fround(Math.fround(1 - fy) * COEF_SCALE));
    const b1 = pyRound(Math.fround(fy * COEF_SCALE));
    const s0 = row(Math.min(Math.max(sy, 0), srcHeight - 1), 0);
    const s1 = row(Math.min(Math.max(sy + 1, 0), srcHeight - 1), 1);
    const end = dstWidth * 3;
    for (let k = 0; k < end; k++) out[k] = (((b0 * (s0[k] >> 4)) >> 16) + ((b1 * (s1[k] >> 4)) >> 16) + 2) >> 2;
    emit(dy, out);
  }
}
