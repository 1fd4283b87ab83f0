import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { readFile, stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { MAX_IMAGE_PIXELS } from '@vp/inference/pool';
// sharp (libvips) is loaded by the main thread before the embedder's thread uses it: a worker thread that exits first
// would otherwise unload the library under the others.
import 'sharp';
import { DECODE_MEMORY_BYTES, decodeEstimateOf, withDecodeMemory } from '../images/image-decode.ts';
import type { EmbedderReply, EmbedderRequest, EmbedderSetup } from './image-embedder.messages.ts';

const MiB = 2 ** 20;

/** No embedding model to run: none configured or built, or the file does not load. The message says which and what to do. */
export class EmbedderUnavailable extends Error {}

/** An image's vector (unit length), or why the image could not be embedded (not an image, truncated, too large). */
export type Embedding = Float32Array | { error: string };

export interface EmbedderOptions {
  /** config.embeddingModelPath: EMBEDDING_MODEL_PATH, else the newest build under the checkout's .cache/models. */
  modelPath: string | undefined;
  mean: [number, number, number];
  std: [number, number, number];
}

export interface EmbedderModel {
  file: string;
  /** The file's SHA-256 (hex): where worker hosts' embedding jobs download it from (storage, by content). */
  sha256: string;
  /** What the vectors depend on: the file's bytes and the normalisation. */
  id: string;
  mean: [number, number, number];
  std: [number, number, number];
}

/**
 * The ONNX image embedder of this control plane: one session on a thread of its own, started on first use, taking
 * batches of encoded images and giving unit vectors. Half the cores (at least one) run it, so requests keep the rest.
 */
export class ImageEmbedder {
  private readonly options: EmbedderOptions;
  private model: Promise<EmbedderModel> | undefined;
  private worker: Promise<Worker> | undefined;
  private readonly pending = new Map<
    number,
    { resolve: (reply: EmbedderReply) => void; reject: (error: Error) => void }
  >();
  private nextId = 1;

  constructor(options: EmbedderOptions) {
    this.options = options;
  }

  /** The model's identity, stored with each vector: a vector of another model is stale. */
  async modelId(): Promise<string> {
    return (await this.resolve()).id;
  }

  /** The model as worker hosts run it: its file, identity and normalisation (EmbedderUnavailable without one). */
  describe(): Promise<EmbedderModel> {
    return this.resolve();
  }

  /**
   * One result per image, in order. The thread decodes a batch's images at once, so a batch is sent in parts whose
   * decoding memory (estimated from each header) fits the process's decoding memory, each part holding its share of it;
   * an image that would take more than all of it is refused, not decoded.
   */
  async embed(images: Uint8Array[]): Promise<Embedding[]> {
    // A model that does not load fails every call, one with no image (all of a batch missing) included.
    await this.start();
    const estimates = await Promise.all(images.map((bytes) => decodeEstimateOf(bytes)));
    const results = Array.from<Embedding>({ length: images.length });
    let part: { indices: number[]; memory: number } = { indices: [], memory: 0 };
    const send = async () => {
      const { indices, memory } = part;
      part = { indices: [], memory: 0 };
      if (indices.length === 0) return;
      const embedded = await withDecodeMemory(memory, () => this.exchange(indices.map((index) => images[index]!)));
      embedded.forEach((embedding, n) => (results[indices[n]!] = embedding));
    };
    for (const [index, estimate] of estimates.entries()) {
      const memory = estimate?.shrunk ?? 0;
      if (memory > DECODE_MEMORY_BYTES) {
        results[index] = {
          error: `the image (${estimate!.pixels}) would take about ${Math.ceil(memory / MiB)} MiB to decode, more than ${DECODE_MEMORY_BYTES / MiB} MiB`,
        };
        continue;
      }
      if (part.memory + memory > DECODE_MEMORY_BYTES) await send();
      part.indices.push(index);
      part.memory += memory;
    }
    await send();
    return results;
  }

  private async exchange(images: Uint8Array[]): Promise<Embedding[]> {
    const worker = await this.start();
    const id = this.nextId++;
    const reply = await new Promise<EmbedderReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      // Copies the thread owns: the callers' buffers may be views into shared ones.
      const owned = images.map((bytes) => new Uint8Array(bytes));
      worker.postMessage(
        { id, images: owned } satisfies EmbedderRequest,
        owned.map((bytes) => bytes.buffer),
      );
    });
    if (reply.kind !== 'embedded')
      throw new EmbedderUnavailable(
        `The image embedder failed: ${reply.kind === 'failed' ? reply.message : reply.kind}`,
      );
    const vectors = reply.vectors.values();
    return reply.errors.map((error) => (error === null ? vectors.next().value! : { error }));
  }

  async close(): Promise<void> {
    const worker = await this.worker?.catch(() => undefined);
    this.worker = undefined;
    await worker?.terminate();
  }

  private resolve(): Promise<EmbedderModel> {
    this.model ??= locate(this.options.modelPath).then(async (file) => {
      const { mean, std } = this.options;
      const bytes = await readFile(file);
      const digest = createHash('sha256')
        .update(bytes)
        .update(JSON.stringify([mean, std]));
      return {
        file,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        id: digest.digest('hex').slice(0, 32),
        mean,
        std,
      };
    });
    // A model found missing is looked for again next time (an operator may build or mount it meanwhile).
    this.model.catch(() => (this.model = undefined));
    return this.model;
  }

  /** The thread with the session loaded; a thread that stops (or never loads) is replaced on the next call. */
  private start(): Promise<Worker> {
    this.worker ??= this.resolve().then(
      ({ file }) =>
        new Promise<Worker>((resolve, reject) => {
          const setup: EmbedderSetup = {
            file,
            threads: Math.max(1, Math.floor(availableParallelism() / 2)),
            mean: this.options.mean,
            std: this.options.std,
            maxPixels: MAX_IMAGE_PIXELS,
          };
          const worker = new Worker(new URL('./image-embedder.worker.ts', import.meta.url), { workerData: setup });
          worker.on('message', (reply: EmbedderReply) => {
            if (reply.kind === 'ready') return resolve(worker);
            if (reply.kind === 'failed' && reply.id === undefined) {
              reject(new EmbedderUnavailable(`The image embedder ${file} does not load: ${reply.message}`));
              void worker.terminate();
              return;
            }
            const waiter = this.pending.get(reply.id!);
            this.pending.delete(reply.id!);
            waiter?.resolve(reply);
          });
          const lost = (error: Error) => {
            this.worker = undefined;
            reject(error);
            for (const waiter of this.pending.values())
              waiter.reject(new Error(`the image embedder's thread stopped: ${error.message}`));
            this.pending.clear();
          };
          worker.on('error', lost);
          worker.on('exit', (code) => lost(new Error(`exit code ${code}`)));
        }),
    );
    this.worker.catch(() => (this.worker = undefined));
    return this.worker;
  }
}

/** The model file (config: EMBEDDING_MODEL_PATH, else the newest build); EmbedderUnavailable when there is none. */
async function locate(configured: string | undefined): Promise<string> {
  if (!configured)
    throw new EmbedderUnavailable(
      'No image embedder: set EMBEDDING_MODEL_PATH, or build one with installer/models/build-models.sh',
    );
  if (
    !(await stat(configured).then(
      (found) => found.isFile(),
      () => false,
    ))
  ) {
    throw new EmbedderUnavailable(`No image embedder at EMBEDDING_MODEL_PATH ${configured}`);
  }
  return configured;
}
