// One inference worker process: decodes images and runs ONNX sessions, so that neither blocks the event loop of the
// process serving requests (the control plane, a deployment's inference server), and so that what a model does to
// memory or to its process stays there. Which sessions it holds is decided by the pool (inference-pool.ts): it loads
// a session on its first run and releases it when told.
import { flushCompileCache } from 'node:module';
import { decodeImage, InvalidImage, InvalidModel, OnnxModel } from '../index.ts';
import type { LoadReply, WorkerFailure, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';

// Its modules are loaded: cached now (with NODE_COMPILE_CACHE, inherited from the control plane), as the pool ends its
// processes with SIGKILL, before any exit would write them.
flushCompileCache();

const { intraOpThreads, spinning, executionProvider } = JSON.parse(process.argv[2]!) as WorkerSetup;
const sessions = new Map<string, Promise<OnnxModel>>();
/** How much resident memory each session's load and runs added to this process (its arena keeps the largest run's peak). */
const footprints = new Map<string, number>();

/** Adds what the process's resident memory grew by while `work` ran to the session's footprint. */
async function measured<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = process.memoryUsage.rss();
  try {
    return await work();
  } finally {
    const grew = process.memoryUsage.rss() - before;
    if (grew > 0 && sessions.has(key)) footprints.set(key, (footprints.get(key) ?? 0) + grew);
  }
}

async function session(key: string, file: string): Promise<OnnxModel> {
  const loading = sessions.get(key);
  if (loading) return loading;
  const model = OnnxModel.load(file, { intraOpThreads, spinning, executionProvider });
  sessions.set(key, model);
  footprints.set(key, 0);
  // A file that does not load is tried again on the next run, not remembered as broken.
  model.catch(() => forget(key));
  return measured(key, () => model);
}

function forget(key: string): void {
  sessions.delete(key);
  footprints.delete(key);
}

async function run(request: Extract<WorkerRequest, { kind: 'run' }>): Promise<WorkerReply> {
  // Decoded while the session loads: both wait on other threads (libvips, onnxruntime).
  const [image, loaded] = await Promise.allSettled([
    decodeImage(request.image, { maxPixels: request.maxPixels }),
    session(request.sessionKey, request.file),
  ]);
  if (image.status === 'rejected') {
    const error = image.reason as Error;
    return {
      id: request.id,
      ok: false,
      cause: error instanceof InvalidImage ? 'image' : 'internal',
      message: error.message,
    };
  }
  if (loaded.status === 'rejected') return loadFailure(request.id, loaded.reason);
  const model = loaded.value;
  try {
    const prediction = await measured(request.sessionKey, () => model.predict(image.value, request.options));
    return {
      id: request.id,
      ok: true,
      prediction,
      info: model.info,
      footprintBytes: footprints.get(request.sessionKey) ?? 0,
    };
  } catch (error) {
    return {
      id: request.id,
      ok: false,
      cause: error instanceof InvalidModel ? 'model' : 'internal',
      message: (error as Error).message,
    };
  }
}

async function load(request: Extract<WorkerRequest, { kind: 'load' }>): Promise<LoadReply> {
  try {
    const model = await session(request.sessionKey, request.file);
    return { id: request.id, ok: true, info: model.info, footprintBytes: footprints.get(request.sessionKey) ?? 0 };
  } catch (error) {
    return loadFailure(request.id, error);
  }
}

function loadFailure(id: number, error: unknown): WorkerFailure {
  return {
    id,
    ok: false,
    cause: 'model',
    message: (error as Error).message,
    invalidFile: error instanceof InvalidModel,
  };
}

async function release(key: string): Promise<void> {
  const loading = sessions.get(key);
  forget(key);
  const model = await loading?.catch(() => undefined);
  await model?.release();
}

process.on('message', (request: WorkerRequest) => {
  if (request.kind === 'release') void release(request.sessionKey);
  else if (request.kind === 'load') void load(request).then((reply) => process.send!(reply));
  else void run(request).then((reply) => process.send!(reply));
});
// The pool's process went: so does this one.
process.on('disconnect', () => process.exit(0));
