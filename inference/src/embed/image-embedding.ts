// The image embedder's arithmetic, shared by the control plane's CPU thread (control-plane/src/embeddings/
// image-embedder.worker.ts) and the embedding jobs of worker hosts (the inference server's `embed` command): vectors
// of both go into the same index, so they must come from the very same preprocessing. Each image is decoded with sharp,
// squashed whole to the model's input size, normalised as (pixel/255 - mean) / std, run as one batch, and each output
// vector L2-normalised.
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import type { ExecutionProvider } from '../onnx-model.ts';

/** The side used where the model's input height and width are dynamic. */
const DEFAULT_SIDE = 224;

export interface EmbedderSession {
  session: ort.InferenceSession;
  height: number;
  width: number;
}

export interface Normalisation {
  mean: [number, number, number];
  std: [number, number, number];
  /** Images with more pixels are refused from their header, before decoding. */
  maxPixels: number;
}

/** One vector per image that decoded, in order; errors[i]: why image i did not (null where it did). */
export interface EmbeddedBatch {
  vectors: Float32Array[];
  errors: Array<string | null>;
}

/** Opens the model, checking it takes one float32 input [N,3,H,W]. */
export async function openEmbedder(
  file: string,
  options: { threads: number; executionProvider: ExecutionProvider },
): Promise<EmbedderSession> {
  const session = await ort.InferenceSession.create(file, {
    executionProviders: [options.executionProvider],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: options.threads,
    // Idle threads give the cores back at once: requests share them.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const input = session.inputMetadata[0];
  const fixed = (dim: number | string | undefined) => (typeof dim === 'number' && dim > 0 ? dim : undefined);
  if (
    session.inputNames.length !== 1 ||
    !input?.isTensor ||
    input.type !== 'float32' ||
    input.shape.length !== 4 ||
    (fixed(input.shape[1]) ?? 3) !== 3
  ) {
    await session.release();
    throw new Error('the model must take one float32 input [N,3,H,W]');
  }
  return { session, height: fixed(input.shape[2]) ?? DEFAULT_SIDE, width: fixed(input.shape[3]) ?? DEFAULT_SIDE };
}

/** RGB pixels of the whole image squashed to width x height (EXIF orientation applied, alpha dropped, grey expanded). */
async function pixels(bytes: Uint8Array, width: number, height: number, maxPixels: number): Promise<Buffer> {
  const { data, info } = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'truncated' })
    .autoOrient()
    .removeAlpha()
    .toColourspace('srgb')
    .resize(width, height, { fit: 'fill' })
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`the image decodes to ${info.channels} channels, not 3`);
  return data;
}

/** Embeds the images as one batch; an image that does not decode gets its reason instead of a vector. */
export async function embedImages(
  model: EmbedderSession,
  images: Uint8Array[],
  norm: Normalisation,
): Promise<EmbeddedBatch> {
  const { session, height, width } = model;
  const plane = height * width;
  const decoded = await Promise.allSettled(images.map((bytes) => pixels(bytes, width, height, norm.maxPixels)));
  const errors = decoded.map((result) =>
    result.status === 'rejected' ? String((result.reason as Error).message ?? result.reason).split('\n')[0] : null,
  );
  const ok = decoded.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  if (ok.length === 0) return { vectors: [], errors };
  const tensor = new Float32Array(ok.length * 3 * plane);
  ok.forEach((rgb, n) => {
    for (let c = 0; c < 3; c++) {
      const offset = (n * 3 + c) * plane;
      const mean = norm.mean[c];
      const std = norm.std[c];
      for (let i = 0; i < plane; i++) tensor[offset + i] = (rgb[i * 3 + c] / 255 - mean) / std;
    }
  });
  const results = await session.run({
    [session.inputNames[0]]: new ort.Tensor('float32', tensor, [ok.length, 3, height, width]),
  });
  const output = results[session.outputNames[0]];
  const dims =
    output.dims.length === 2 && output.dims[0] === ok.length && output.type === 'float32' ? output.dims[1] : 0;
  if (!dims)
    throw new Error(`the model's first output is ${output.type} [${output.dims.join(',')}], not float32 [N,D]`);
  const flat = output.data as Float32Array;
  const vectors = ok.map((_, n) => {
    const vector = flat.slice(n * dims, (n + 1) * dims);
    let squares = 0;
    for (let i = 0; i < dims; i++) squares += vector[i] * vector[i];
    const norm = Math.sqrt(squares) || 1;
    for (let i = 0; i < dims; i++) vector[i] /= norm;
    return vector;
  });
  for (const result of Object.values(results)) result.dispose();
  return { vectors, errors };
}
