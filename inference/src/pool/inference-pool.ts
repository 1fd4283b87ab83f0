import { Worker } from 'node:worker_threads';
import type { ExecutionProvider, ModelInfo, Prediction, PredictOptions } from '../index.ts';
// sharp (libvips) is loaded by the main thread before any worker uses it: a worker thread that exits first would
// otherwise unload the library under the others.
import 'sharp';
import type { LoadReply, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';

/** Images with more pixels are refused from their header, before decoding (50 MP: 150 MB of RGB). */
export const MAX_IMAGE_PIXELS = 50_000_000;

/** A session's footprint is estimated from its file: the weights twice (file buffer, arena) plus activations. */
const ACTIVATION_BYTES = 64 * 2 ** 20;
export const sessionBytes = (fileBytes: number) => 2 * fileBytes + ACTIVATION_BYTES;

export interface PoolOptions {
  workers: number;
  /** onnxruntime intra-op threads per session. */
  intraOpThreads: number;
  /** Whether onnxruntime's idle threads spin (see SessionOptions.spinning). */
  spinning: boolean;
  /** Estimated memory the resident sessions may take together; least recently used ones are released first. */
  cacheBytes: number;
  /** Default cpu. */
  executionProvider?: ExecutionProvider;
}

/** The inference's failure, for the caller to map: 'image' is the client's (400), the others are the model's or ours. */
export class InferenceError extends Error {
  readonly kind: 'image' | 'model' | 'internal';
  constructor(kind: InferenceError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (reply: WorkerReply | LoadReply) => void; reject: (error: Error) => void }>;
}

interface Resident {
  slot: Slot;
  bytes: number;
  lastUsed: number;
  running: number;
}

/**
 * Worker threads that decode and run ONNX sessions. Each session lives in one worker (a model's requests all go
 * there; onnxruntime runs them concurrently off that worker's JS thread), placed on the worker holding the fewest
 * bytes; sessions are evicted least recently used first once their estimated memory passes `cacheBytes`.
 */
export class InferencePool {
  private readonly options: PoolOptions;
  private readonly slots: Slot[] = [];
  private readonly resident = new Map<string, Resident>();
  private nextId = 1;
  private closed = false;

  constructor(options: PoolOptions) {
    this.options = options;
  }

  async run(artifact: { key: string; file: string; bytes: number }, image: Uint8Array, options: PredictOptions, maxPixels: number): Promise<{ prediction: Prediction; info: ModelInfo }> {
    if (this.closed) throw new InferenceError('internal', 'the inference pool is closed');
    const session = this.place(artifact.key, artifact.bytes);
    session.running += 1;
    session.lastUsed = performance.now();
    this.evict(artifact.key);
    // A copy the worker owns: the caller's bytes may be a view into a shared buffer.
    const owned = new Uint8Array(image);
    const id = this.nextId++;
    const request: WorkerRequest = { kind: 'run', id, sessionKey: artifact.key, file: artifact.file, image: owned, options, maxPixels };
    try {
      const reply = (await this.ask(session.slot, request, [owned.buffer])) as WorkerReply;
      if (!reply.ok) throw new InferenceError(reply.cause, reply.message);
      return { prediction: reply.prediction, info: reply.info };
    } finally {
      session.running -= 1;
      session.lastUsed = performance.now();
    }
  }

  /** Loads the artifact's session before any run; rejects with InferenceError('model') when it does not load. */
  async load(artifact: { key: string; file: string; bytes: number }): Promise<ModelInfo> {
    if (this.closed) throw new InferenceError('internal', 'the inference pool is closed');
    const session = this.place(artifact.key, artifact.bytes);
    const reply = (await this.ask(session.slot, { kind: 'load', id: this.nextId++, sessionKey: artifact.key, file: artifact.file }, [])) as LoadReply;
    if (!reply.ok) {
      this.resident.delete(artifact.key);
      throw new InferenceError(reply.cause, reply.message);
    }
    return reply.info;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((slot) => slot.worker.terminate()));
  }

  private place(key: string, fileBytes: number): Resident {
    let session = this.resident.get(key);
    if (!session) {
      // The workers start with the first predict: a control plane that never predicts never loads onnxruntime.
      while (this.slots.length < this.options.workers) this.slots.push(this.spawn());
      const held = (slot: Slot) => [...this.resident.values()].filter((other) => other.slot === slot).reduce((sum, other) => sum + other.bytes, 0);
      const slot = this.slots.reduce((best, candidate) => (held(candidate) < held(best) ? candidate : best));
      session = { slot, bytes: sessionBytes(fileBytes), lastUsed: 0, running: 0 };
      this.resident.set(key, session);
    }
    return session;
  }

  /** Releases idle sessions, least recently used first, until the estimate fits (the one in use always stays). */
  private evict(keep: string): void {
    let total = [...this.resident.values()].reduce((sum, session) => sum + session.bytes, 0);
    const idle = [...this.resident.entries()].filter(([key, session]) => key !== keep && session.running === 0).sort(([, a], [, b]) => a.lastUsed - b.lastUsed);
    for (const [key, session] of idle) {
      if (total <= this.options.cacheBytes) break;
      this.resident.delete(key);
      total -= session.bytes;
      session.slot.worker.postMessage({ kind: 'release', sessionKey: key } satisfies WorkerRequest);
    }
  }

  private ask(slot: Slot, request: Extract<WorkerRequest, { id: number }>, transfer: ArrayBuffer[]): Promise<WorkerReply | LoadReply> {
    return new Promise((resolve, reject) => {
      slot.pending.set(request.id, { resolve, reject });
      slot.worker.postMessage(request, transfer);
    });
  }

  private spawn(): Slot {
    const { intraOpThreads, spinning, executionProvider } = this.options;
    const setup: WorkerSetup = { intraOpThreads, spinning, executionProvider };
    const worker = new Worker(new URL('./inference-worker.ts', import.meta.url), { workerData: setup });
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (reply: WorkerReply | LoadReply) => {
      const waiter = slot.pending.get(reply.id);
      slot.pending.delete(reply.id);
      waiter?.resolve(reply);
    });
    // A worker that dies takes its sessions and runs with it; a fresh one takes its place.
    const lost = (error: Error) => {
      for (const waiter of slot.pending.values()) waiter.reject(new InferenceError('internal', `inference worker stopped: ${error.message}`));
      slot.pending.clear();
      for (const [key, session] of this.resident) if (session.slot === slot) this.resident.delete(key);
      const index = this.slots.indexOf(slot);
      if (!this.closed && index >= 0) this.slots[index] = this.spawn();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => {
      if (!this.closed) lost(new Error(`exit code ${code}`));
    });
    return slot;
  }
}
