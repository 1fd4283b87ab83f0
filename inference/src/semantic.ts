// Semantic segmentation as models/yolo/semantic/predict.py does it for an export with ArgMax in the graph (what
// 8.4 exports): the [1, H, W] class map, nearest-resized to the model input if needed, then ops.scale_masks(mode=nearest):
// the letterbox padding cropped off and the rest nearest-resized to the original image (PyTorch's legacy 'nearest').
import type { Tensor } from 'onnxruntime-node';
import { pyRound } from './py-math.ts';

export function semanticClassMap(output: Tensor, input: [number, number], original: [number, number]): Uint8Array {
  const dims = output.dims as number[];
  if (dims.length !== 3)
    throw new Error(
      `semantic output of shape [${dims.join(', ')}]: expected a [1, H, W] class map (ArgMax in the graph)`,
    );
  const [, mapH, mapW] = dims;
  const values = output.data as ArrayLike<number | bigint>;
  let map: Uint8Array = Uint8Array.from({ length: mapH * mapW }, (_, i) => Number(values[i]));
  let [h1, w1] = [mapH, mapW];
  if (h1 !== input[0] || w1 !== input[1]) {
    map = nearest(map, h1, w1, 0, 0, h1, w1, input[0], input[1]);
    [h1, w1] = input;
  }
  const [h0, w0] = original;
  if (h1 === h0 && w1 === w0) return map;
  const gain = Math.min(h1 / h0, w1 / w0);
  const contentH = Math.max(pyRound(h0 * gain), 1);
  const contentW = Math.max(pyRound(w0 * gain), 1);
  const top = pyRound((h1 - contentH) / 2 - 0.1);
  const left = pyRound((w1 - contentW) / 2 - 0.1);
  return nearest(map, h1, w1, top, left, Math.min(contentH, h1 - top), Math.min(contentW, w1 - left), h0, w0);
}

/** F.interpolate(mode='nearest') of the [top, left, height, width] window of a map to outH × outW. */
function nearest(
  map: Uint8Array,
  _mapH: number,
  mapW: number,
  top: number,
  left: number,
  inH: number,
  inW: number,
  outH: number,
  outW: number,
): Uint8Array {
  const out = new Uint8Array(outH * outW);
  const columns = Int32Array.from({ length: outW }, (_, x) => left + sourceIndex(x, inW, outW));
  for (let y = 0; y < outH; y++) {
    const row = (top + sourceIndex(y, inH, outH)) * mapW;
    for (let x = 0; x < outW; x++) out[y * outW + x] = map[row + columns[x]];
  }
  return out;
}

/** PyTorch's nearest_idx: identity, halving, or min(floor(dst · (in / out)), in − 1) in float32. */
function sourceIndex(dst: number, inSize: number, outSize: number): number {
  if (outSize === inSize) return dst;
  if (outSize === 2 * inSize) return dst >> 1;
  const scale = Math.fround(inSize / outSize);
  return Math.min(Math.floor(Math.fround(dst * scale)), inSize - 1);
}
