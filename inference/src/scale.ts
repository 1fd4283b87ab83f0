// ultralytics' ops.scale_boxes / scale_coords: from model-input pixels back to the original image (the gain and the
// padding recomputed from the two shapes exactly as ultralytics does, float32 like its tensors), clipped to the image.
import { pyRound } from './py-math.ts';

const f = Math.fround;

export interface Scaler {
  /** Original image [height, width]. */
  height: number;
  width: number;
  padX: number;
  padY: number;
  gainX: number;
  gainY: number;
}

export function scaler(input: [number, number], original: [number, number]): Scaler {
  const [h0, w0] = original;
  const gain = Math.min(input[0] / h0, input[1] / w0);
  const newH = Math.max(pyRound(h0 * gain), 1);
  const newW = Math.max(pyRound(w0 * gain), 1);
  return {
    height: h0,
    width: w0,
    gainY: f(newH / h0),
    gainX: f(newW / w0),
    padX: pyRound((input[1] - newW) / 2 - 0.1),
    padY: pyRound((input[0] - newH) / 2 - 0.1),
  };
}

const clip = (value: number, max: number) => Math.min(Math.max(value, 0), max);

export function scaleX(s: Scaler, x: number, clipped = true): number {
  const value = f(f(x - s.padX) / s.gainX);
  return clipped ? clip(value, s.width) : value;
}

export function scaleY(s: Scaler, y: number, clipped = true): number {
  const value = f(f(y - s.padY) / s.gainY);
  return clipped ? clip(value, s.height) : value;
}
