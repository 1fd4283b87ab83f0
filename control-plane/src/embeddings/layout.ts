import { Worker } from 'node:worker_threads';
import type { LayoutReply, LayoutSetup } from './layout.messages.ts';

export interface Layout {
  /** [x0, y0, x1, y1, ...] in the vectors' order. */
  xy: Float32Array;
  /** Each point's island rank by size (0 the largest), -1 when scattered. */
  islands: Int32Array;
}

/**
 * The vectors' 2-D UMAP layout and its islands, computed on a thread of its own (one per call: it is a job's last
 * stage, not a hot path). Aborting `signal` stops the thread.
 */
export function computeLayout(
  vectors: Float32Array,
  dims: number,
  options: { seed: number; signal: AbortSignal; progress: (percent: number) => void },
): Promise<Layout> {
  options.signal.throwIfAborted();
  if (vectors.length === 0) return Promise.resolve({ xy: new Float32Array(0), islands: new Int32Array(0) });
  return new Promise<Layout>((resolve, reject) => {
    const worker = new Worker(new URL('./layout.worker.ts', import.meta.url), {
      workerData: { vectors, dims, seed: options.seed } satisfies LayoutSetup,
      transferList: [vectors.buffer as ArrayBuffer],
    });
    const abort = () => void worker.terminate();
    options.signal.addEventListener('abort', abort, { once: true });
    const settle = () => options.signal.removeEventListener('abort', abort);
    worker.on('message', (reply: LayoutReply) => {
      if (reply.kind === 'progress') return options.progress(reply.percent);
      settle();
      resolve({ xy: reply.xy, islands: reply.islands });
    });
    worker.on('error', (error) => {
      settle();
      reject(error);
    });
    worker.on('exit', () => {
      settle();
      reject(options.signal.aborted ? options.signal.reason : new Error('the layout thread stopped'));
    });
  });
}
