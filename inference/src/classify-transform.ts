// ultralytics' classify preprocessing (classify_transforms): torchvision Resize(shortest edge, BILINEAR) on a PIL image,
// which is PIL's antialiased two-pass resample in 8-bit fixed point (reproduced here bit for bit), CenterCrop, / 255.
import type { DecodedImage } from './decode.ts';
import { pyRound } from './py-math.ts';

const PRECISION_BITS = 32 - 8 - 2;
const UNIT = new Float32Array(256).map((_, value) => value / 255);

export function classifyTensor(
  image: DecodedImage,
  size: [number, number],
): { tensor: Float32Array; height: number; width: number } {
  const [cropH, cropW] = size;
  let { width, height } = image;
  let pixels = image.data;
  // torchvision _compute_resized_output_size: an int size resizes the shorter edge; [h, w] resizes to exactly that.
  let outW: number;
  let outH: number;
  if (cropH === cropW) {
    const [short, long] = width <= height ? [width, height] : [height, width];
    const newLong = Math.floor((cropH * long) / short);
    [outW, outH] = width <= height ? [cropH, newLong] : [newLong, cropH];
  } else {
    [outW, outH] = [cropW, cropH];
  }
  if (outW !== width || outH !== height) {
    pixels = resamplePil(pixels, width, height, outW, outH);
    width = outW;
    height = outH;
  }
  const top = pyRound((height - cropH) / 2);
  const left = pyRound((width - cropW) / 2);
  const plane = cropH * cropW;
  const tensor = new Float32Array(3 * plane);
  for (let y = 0; y < cropH; y++) {
    const sy = y + top;
    for (let x = 0; x < cropW; x++) {
      const sx = x + left;
      const at = y * cropW + x;
      if (sy < 0 || sy >= height || sx < 0 || sx >= width) continue; // CenterCrop pads with 0
      const from = (sy * width + sx) * 3;
      tensor[at] = UNIT[pixels[from]];
      tensor[plane + at] = UNIT[pixels[from + 1]];
      tensor[2 * plane + at] = UNIT[pixels[from + 2]];
    }
  }
  return { tensor, height: cropH, width: cropW };
}

/** PIL ImagingResample with the BILINEAR filter: horizontal pass, then vertical, each in 8-bit fixed point. */
function resamplePil(src: Uint8Array, width: number, height: number, outW: number, outH: number): Uint8Array {
  const horiz = coefficients(width, outW);
  const vert = coefficients(height, outH);
  let pixels = src;
  let rows = height;
  let rowFirst = 0;
  if (outW !== width) {
    // Only the source rows the vertical pass reads.
    rowFirst = vert.bounds[0];
    const rowLast = vert.bounds[(outH - 1) * 2] + vert.bounds[(outH - 1) * 2 + 1];
    rows = rowLast - rowFirst;
    const temp = new Uint8Array(outW * rows * 3);
    for (let y = 0; y < rows; y++) {
      const line = (y + rowFirst) * width * 3;
      for (let x = 0; x < outW; x++) {
        const min = horiz.bounds[x * 2];
        const count = horiz.bounds[x * 2 + 1];
        const k = x * horiz.ksize;
        let s0 = 1 << (PRECISION_BITS - 1);
        let s1 = s0;
        let s2 = s0;
        for (let i = 0; i < count; i++) {
          const weight = horiz.kk[k + i];
          const at = line + (min + i) * 3;
          s0 += pixels[at] * weight;
          s1 += pixels[at + 1] * weight;
          s2 += pixels[at + 2] * weight;
        }
        const out = (y * outW + x) * 3;
        temp[out] = clip8(s0);
        temp[out + 1] = clip8(s1);
        temp[out + 2] = clip8(s2);
      }
    }
    pixels = temp;
    width = outW;
  }
  if (outH === rows && rowFirst === 0 && outH === height) return pixels;
  const out = new Uint8Array(outW * outH * 3);
  for (let y = 0; y < outH; y++) {
    const min = vert.bounds[y * 2] - rowFirst;
    const count = vert.bounds[y * 2 + 1];
    const k = y * vert.ksize;
    for (let x = 0; x < outW * 3; x += 3) {
      let s0 = 1 << (PRECISION_BITS - 1);
      let s1 = s0;
      let s2 = s0;
      for (let i = 0; i < count; i++) {
        const weight = vert.kk[k + i];
        const at = (min + i) * outW * 3 + x;
        s0 += pixels[at] * weight;
        s1 += pixels[at + 1] * weight;
        s2 += pixels[at + 2] * weight;
      }
      out[y * outW * 3 + x] = clip8(s0);
      out[y * outW * 3 + x + 1] = clip8(s1);
      out[y * outW * 3 + x + 2] = clip8(s2);
    }
  }
  return out;
}

/** PIL precompute_coeffs + normalize_coeffs_8bpc for the bilinear (triangle) filter, support 1. */
function coefficients(inSize: number, outSize: number) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const kk = new Int32Array(outSize * ksize);
  const bounds = new Int32Array(outSize * 2);
  const weights = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterScale;
    const min = Math.max(Math.trunc(center - support + 0.5), 0);
    const max = Math.min(Math.trunc(center + support + 0.5), inSize) - min;
    let total = 0;
    for (let x = 0; x < max; x++) {
      const t = Math.abs((x + min - center + 0.5) * ss);
      const w = t < 1 ? 1 - t : 0;
      weights[x] = w;
      total += w;
    }
    for (let x = 0; x < max; x++) {
      const w = total !== 0 ? weights[x] / total : weights[x];
      kk[xx * ksize + x] =
        w < 0 ? Math.trunc(-0.5 + w * (1 << PRECISION_BITS)) : Math.trunc(0.5 + w * (1 << PRECISION_BITS));
    }
    bounds[xx * 2] = min;
    bounds[xx * 2 + 1] = max;
  }
  return { kk, bounds, ksize };
}

function clip8(value: number): number {
  if (value >= (1 << PRECISION_BITS) << 8) return 255;
  if (value <= 0) return 0;
  return value >> PRECISION_BITS;
}
