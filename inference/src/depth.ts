// Depth as models/yolo/depth/predict.py makes it: the [1, 1, h, w] (or [1, h, w]) map bilinearly resized, corners
// aligned, to the model input and then to the original image (the input was stretched, not letterboxed), in float32
// as PyTorch's upsample_bilinear2d computes it.
import type { Tensor } from 'onnxruntime-node';

export function depthMap(output: Tensor, input: [number, number], original: [number, number]): Float32Array {
  const dims = output.dims as number[];
  const [h, w] = dims.slice(-2);
  let map = output.data as Float32Array;
  let [mapH, mapW] = [h, w];
  if (mapH !== input[0] || mapW !== input[1]) {
    map = bilinearAlignCorners(map, mapH, mapW, input[0], input[1]);
    [mapH, mapW] = input;
  }
  return bilinearAlignCorners(map, mapH, mapW, original[0], original[1]);
}

const f = Math.fround;

function taps(inSize: number, outSize: number) {
  const scale = outSize > 1 ? f((inSize - 1) / (outSize - 1)) : 0;
  const index = new Int32Array(outSize * 2);
  const weight = new Float32Array(outSize * 2);
  for (let d = 0; d < outSize; d++) {
    const real = f(scale * d);
    const i0 = Math.floor(real);
    const lambda1 = Math.min(Math.max(f(real - i0), 0), 1);
    index[d * 2] = i0;
    index[d * 2 + 1] = i0 + (i0 < inSize - 1 ? 1 : 0);
    weight[d * 2] = f(1 - lambda1);
    weight[d * 2 + 1] = lambda1;
  }
  return { index, weight };
}

/** F.interpolate(mode='bilinear', align_corners=True) of one channel. */
function bilinearAlignCorners(src: Float32Array, inH: number, inW: number, outH: number, outW: number): Float32Array {
  const out = new Float32Array(outH * outW);
  const xs = taps(inW, outW);
  const ys = taps(inH, outH);
  for (let y = 0; y < outH; y++) {
    const r0 = ys.index[y * 2] * inW;
    const r1 = ys.index[y * 2 + 1] * inW;
    const h0 = ys.weight[y * 2];
    const h1 = ys.weight[y * 2 + 1];
    for (let x = 0; x < outW; x++) {
      const c0 = xs.index[x * 2];
      const c1 = xs.index[x * 2 + 1];
      const w0 = xs.weight[x * 2];
      const w1 = xs.weight[x * 2 + 1];
      const top = f(f(src[r0 + c0] * w0) + f(src[r0 + c1] * w1));
      const bottom = f(f(src[r1 + c0] * w0) + f(src[r1 + c1] * w1));
      out[y * outW + x] = f(f(top * h0) + f(bottom * h1));
    }
  }
  return out;
}
