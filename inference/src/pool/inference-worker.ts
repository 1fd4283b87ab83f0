// One inference worker thread: decodes images and runs ONNX sessions, so that neither blocks the event loop of the
// process serving requests (the control plane, a deployment's inference server). Which sessions it holds is decided by the pool (inference-pool.ts): it loads a session on
// its first run and releases it when told.
import { parentPort, workerData } from 'node:worker_threads';
import { decodeImage, InvalidImage, OnnxModel } from '../index.ts';
import type { LoadReply, WorkerReply, WorkerRequest, WorkerSetup } from './inference-messages.ts';

const { intraOpThreads, spinning, executionProvider } = workerData as WorkerSetup;
const sessions = new Map<string, Promise<OnnxModel>>();

function session(key: string, file: string): Promise<OnnxModel> {
  let loading = sessions.get(key);
  if (!loading) {
    loading = OnnxModel.load(file, { intraOpThreads, spinning, executionProvider });
    sessions.set(key, loading);
    // A file that does not load is tried again on the next run, not remembered as broken.
    loading.catch(() => sessions.delete(key));
  }
  return loading;
}

async function run(request: Extract<WorkerRequest, { kind: 'run' }>): Promise<WorkerReply> {
  // Decoded while the session loads: both wait on other threads (libvips, onnxruntime).
  const [image, model] = await Promise.allSettled([decodeImage(request.image, { maxPixels: request.maxPixels }), session(request.sessionKey, request.file)]);
  if (image.status === 'rejected') {
    const error = image.reason as Error;
    return { id: request.id, ok: false, cause: error instanceof InvalidImage ? 'image' : 'internal', message: error.message };
  }
  if (model.status === 'rejected') return { id: request.id, ok: false, cause: 'model', message: (model.reason as Error).message };
  try {
    const prediction = await model.value.predict(image.value, request.options);
    return { id: request.id, ok: true, prediction, info: model.value.info };
  } catch (error) {
    return { id: request.id, ok: false, cause: 'internal', message: (error as Error).message };
  }
}

async function load(request: Extract<WorkerRequest, { kind: 'load' }>): Promise<LoadReply> {
  try {
    return { id: request.id, ok: true, info: (await session(request.sessionKey, request.file)).info };
  } catch (error) {
    return { id: request.id, ok: false, cause: 'model', message: (error as Error).message };
  }
}

async function release(key: string): Promise<void> {
  const loading = sessions.get(key);
  sessions.delete(key);
  const model = await loading?.catch(() => undefined);
  await model?.release();
}

parentPort!.on('message', (request: WorkerRequest) => {
  if (request.kind === 'release') {
    void release(request.sessionKey);
    return;
  }
  if (request.kind === 'load') {
    void load(request).then((reply) => parentPort!.postMessage(reply));
    return;
  }
  void run(request).then((reply) => {
    // Typed arrays of dense outputs (masks, depth) are moved, not copied.
    const transfer = [reply.ok && reply.prediction.semanticMask?.buffer, reply.ok && reply.prediction.depth?.buffer].filter((buffer): buffer is ArrayBuffer => buffer instanceof ArrayBuffer);
    parentPort!.postMessage(reply, transfer);
  });
});
