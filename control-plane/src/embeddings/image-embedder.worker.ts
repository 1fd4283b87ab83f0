// The image embedder's thread: onnxruntime-node runs a session synchronously on the calling thread, so the model runs
// here, off the control plane's event loop. Decodes each image with sharp (on libuv's pool), squashes it to the model's
// input size, normalises, runs the batch and L2-normalises each vector.
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import type { EmbedderReply, EmbedderRequest, EmbedderSetup } from './image-embedder.messages.ts';

/** The side used where the model's input height and width are dynamic. */
const DEFAULT_SIDE = 224;

const setup = workerData as EmbedderSetup;

async function open(): Promise<{ session: ort.InferenceSession; height: number; width: number }> {
  const session = await ort.InferenceSession.create(setup.file, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: setup.threads,
    // Idle threads give the cores back at once: requests share them.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const input = session.inputMetadata[0];
  const fixed = (dim: number | string | undefined) => (typeof dim === 'number' && dim > 0 ? dim : undefined);
  if (session.inputNames.length !== 1 || !input?.isTensor || input.type !== 'float32' || input.shape.length !== 4 || (fixed(input.shape[1]) ?? 3) !== 3) {
    await session.release();
    throw new Error('the model must take one float32 input [N,3,H,W]');
  }
  return { session, height: fixed(input.shape[2]) ?? DEFAULT_SIDE, width: fixed(input.shape[3]) ?? DEFAULT_SIDE };
}

/** RGB pixels of the whole image squashed to width x height (EXIF orientation applied, alpha dropped, grey expanded). */
async function pixels(bytes: Uint8Array, width: number, height: number): Promise<Buffer> {
  const { data, info } = await sharp(bytes, { limitInputPixels: setup.maxPixels, failOn: 'truncated' })
    .autoOrient()
    .removeAlpha()
    .toColourspace('srgb')
    .resize(width, height, { fit: 'fill' })
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`the image decodes to ${info.channels} channels, not 3`);
  return data;
}

async function embed(model: Awaited<ReturnType<typeof open>>, { id, images }: EmbedderRequest): Promise<Extract<EmbedderReply, { kind: 'embedded' }>> {
  const { session, height, width } = model;
  const plane = height * width;
  const decoded = await Promise.allSettled(images.map((bytes) => pixels(bytes, width, height)));
  const errors = decoded.map((result) => (result.status === 'rejected' ? String((result.reason as Error).message ?? result.reason).split('\n')[0] : null));
  const ok = decoded.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  if (ok.length === 0) return { kind: 'embedded', id, vectors: [], errors };
  const tensor = new Float32Array(ok.length * 3 * plane);
  ok.forEach((rgb, n) => {
    for (let c = 0; c < 3; c++) {
      const offset = (n * 3 + c) * plane;
      const mean = setup.mean[c];
      const std = setup.std[c];
      for (let i = 0; i < plane; i++) tensor[offset + i] = (rgb[i * 3 + c] / 255 - mean) / std;
    }
  });
  const results = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', tensor, [ok.length, 3, height, width]) });
  const output = results[session.outputNames[0]];
  const dims = output.dims.length === 2 && output.dims[0] === ok.length && output.type === 'float32' ? output.dims[1] : 0;
  if (!dims) throw new Error(`the model's first output is ${output.type} [${output.dims.join(',')}], not float32 [N,D]`);
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
  return { kind: 'embedded', id, vectors, errors };
}

const loading = open();
loading.then(
  () => parentPort!.postMessage({ kind: 'ready' } satisfies EmbedderReply),
  (error: Error) => parentPort!.postMessage({ kind: 'failed', message: error.message.split('\n')[0] } satisfies EmbedderReply),
);

parentPort!.on('message', (request: EmbedderRequest) => {
  void loading
    .then((model) => embed(model, request))
    .catch((error: Error): EmbedderReply => ({ kind: 'failed', id: request.id, message: error.message.split('\n')[0] }))
    .then((reply) => parentPort!.postMessage(reply, reply.kind === 'embedded' ? reply.vectors.map((vector) => vector.buffer as ArrayBuffer) : []));
});
