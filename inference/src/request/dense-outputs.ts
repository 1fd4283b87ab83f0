import type { Prediction } from '../prediction.ts';
import sharp from 'sharp';

type Bits = 8 | 12 | 16;

async function png(pixels: Uint8Array | Uint16Array, width: number, height: number): Promise<string> {
  const image = sharp(pixels, { raw: { width, height, channels: 1 } });
  const encoded = await (pixels instanceof Uint16Array ? image.toColourspace('grey16') : image).png().toBuffer();
  return encoded.toString('base64');
}

/** Semantic and depth outputs as the spec's PNG payloads (depth = pixel × max / divisor: 255 for 8 bits, else 65535). */
export async function denseOutputs(prediction: Prediction, bits: Bits) {
  const [height, width] = prediction.shape;
  const shape = [height, width];
  const out: {
    semantic_mask?: { shape: number[]; encoding: 'png'; data: string };
    depth?: { shape: number[]; encoding: 'png'; data: string; min: number; max: number; bits: Bits };
  } = {};
  if (prediction.semanticMask)
    out.semantic_mask = { shape, encoding: 'png', data: await png(prediction.semanticMask, width, height) };
  if (prediction.depth) {
    const depth = prediction.depth;
    let min = Infinity;
    let max = -Infinity;
    for (const value of depth) {
      if (value < min) min = value;
      if (value > max) max = value;
    }
    const divisor = bits === 8 ? 255 : 65535;
    const pixels = bits === 8 ? new Uint8Array(depth.length) : new Uint16Array(depth.length);
    if (max > 0)
      for (let index = 0; index < depth.length; index += 1)
        pixels[index] = Math.round((Math.max(0, depth[index]!) / max) * divisor);
    out.depth = {
      shape,
      encoding: 'png',
      data: await png(pixels, width, height),
      min: Number.isFinite(min) ? min : 0,
      max: Number.isFinite(max) ? max : 0,
      bits,
    };
  }
  return out;
}
