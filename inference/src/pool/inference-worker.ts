// One inference worker process: decodes images and runs ONNX sessions, so that neither blocks the event loop of the
// process serving requests (the control plane, a deployment's inference server), and so that what a model does to
// memory or to its process stays there. Which sessions it holds is decided by the pool (inference-pool.ts): it loads
// a session on its first run and releases it when told.
import { decodeImage, InvalidImage, InvalidModel, OnnxModel } from '../index.ts';
import type { LoadReply, WorkerFailure, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';

const { intraOpThreads, spinning, executionProvider } = JSON.parse(process.argv[2]!) as WorkerSetup;
const sessions = new Map<string, Promise<OnnxModel>>();

/** The session, and when this call loaded it, how much resident memory the load added (what the pool accounts). */
async function session(key: string, file: string): Promise<{ model: OnnxModel; loadedBytes?: number }> {
  const loading = sessions.get(key);
  if (loading) return { model: await loading };
  const before = process.memoryUsage.rss();
  const model = OnnxModel.load(file, { intraOpThreads, spinning, executionProvider });
  sessions.set(key, model);
  // A file that does not load is tried again on the next run, not remembered as broken.
  model.catch(() => sessions.delete(key));
  return { model: await model, loadedBytes: Math.max(0, process.memoryUsage.rss() - before) };
}

async function run(request: Extract<WorkerRequest, { kind: 'run' }>): Promise<WorkerReply> {
  // Decoded while the session loads: both wait on other threads (libvips, onnxruntime).
  const [image, loaded] = await Promise.allSettled([decodeImage(request.image, { maxPixels: request.maxPixels }), session(request.sessionKey, request.file)]);
  if (image.status === 'rejected') {
    const error = image.reason as Error;
    return { id: request.id, ok: false, cause: error instanceof InvalidImage ? 'image' : 'internal', message: error.message };
  }
  if (loaded.status === 'rejected') return loadFailure(request.id, loaded.reason);
  const { model, loadedBytes } = loaded.value;
  try {
    const prediction = await model.predict(image.value, request.options);
    return { id: request.id, ok: true, prediction, info: model.info, loadedBytes };
  } catch (error) {
    return { id: request.id, ok: false, cause: error instanceof InvalidModel ? 'model' : 'internal', message: (error as Error).message };
  }
}

async function load(request: Extract<WorkerRequest, { kind: 'load' }>): Promise<LoadReply> {
  try {
    const { model, loadedBytes } = await session(request.sessionKey, request.file);
    return { id: request.id, ok: true, info: model.info, loadedBytes };
  } catch (error) {
    return loadFailure(request.id, error);
  }
}

function loadFailure(id: number, error: unknown): WorkerFailure {
  return { id, ok: false, cause: 'model', message: (error as Error).message, invalidFile: error instanceof InvalidModel };
}

async function release(key: string): Promise<void> {
  const loading = sessions.get(key);
  sessions.delete(key);
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
