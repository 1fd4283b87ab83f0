import { Worker } from 'node:worker_threads';
import type { LayoutReply, LayoutSetup, PlaceRequest } from './layout.messages.ts';

export interface Layout {
  /** [x0, y0, x1, y1, ...] in the vectors' order. */
  xy: Float32Array;
  /** Each point's island rank by size (0 the largest), -1 when scattered. */
  islands: Int32Array;
}

/** A layout whose thread goes on placing further vectors on it, one batch at a time, until closed. */
export interface PlacingLayout extends Layout {
  /** Places vectors (count x dims, unit length) beside their nearest laid-out neighbours, on their islands. */
  place(vectors: Float32Array): Promise<Layout>;
  close(): Promise<void>;
}

interface Pending {
  resolve: (layout: Layout) => void;
  reject: (error: unknown) => void;
}

/**
 * The vectors' 2-D UMAP layout and its islands, computed on a thread of its own (one per call: it is a job's last
 * stage, not a hot path). With `placing`, the thread stays to place further vectors (PlacingLayout.place) until
 * closed. Aborting `signal` stops the thread.
 */
export function computeLayout(
  vectors: Float32Array,
  dims: number,
  options: { seed: number; signal: AbortSignal; progress: (percent: number) => void; placing?: boolean },
): Promise<PlacingLayout> {
  const { signal } = options;
  signal.throwIfAborted();
  if (vectors.length === 0) {
    const none = { xy: new Float32Array(0), islands: new Int32Array(0) };
    return Promise.resolve({ ...none, place: async () => none, close: async () => undefined });
  }
  return new Promise<PlacingLayout>((resolve, reject) => {
    const worker = new Worker(new URL('./layout.worker.ts', import.meta.url), {
      workerData: { vectors, dims, seed: options.seed, placing: options.placing ?? false } satisfies LayoutSetup,
      transferList: [vectors.buffer as ArrayBuffer],
    });
    const close = async () => void (await worker.terminate());
    const place = (more: Float32Array) =>
      new Promise<Layout>((resolvePlaced, rejectPlaced) => {
        pending = { resolve: resolvePlaced, reject: rejectPlaced };
        worker.postMessage({ vectors: more } satisfies PlaceRequest, [more.buffer as ArrayBuffer]);
      });
    let pending: Pending | undefined = { resolve: (layout) => resolve({ ...layout, place, close }), reject };
    const settle = (answer: (waiting: Pending) => void) => {
      const waiting = pending;
      pending = undefined;
      if (waiting) answer(waiting);
    };
    const abort = () => void worker.terminate();
    signal.addEventListener('abort', abort, { once: true });
    worker.on('message', (reply: LayoutReply) => {
      if (reply.kind === 'progress') return options.progress(reply.percent);
      settle((waiting) => waiting.resolve({ xy: reply.xy, islands: reply.islands }));
    });
    worker.on('error', (error) => settle((waiting) => waiting.reject(error)));
    worker.on('exit', () => {
      signal.removeEventListener('abort', abort);
      settle((waiting) => waiting.reject(signal.aborted ? signal.reason : new Error('the layout thread stopped')));
    });
  });
}
