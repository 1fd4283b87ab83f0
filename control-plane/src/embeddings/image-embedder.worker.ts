// The image embedder's thread: onnxruntime-node runs a session synchronously on the calling thread, so the model runs
// here, off the control plane's event loop. The preprocessing and arithmetic are @vp/inference/embed's, which worker
// hosts' embedding jobs run too.
import { parentPort, workerData } from 'node:worker_threads';
import { embedImages, openEmbedder } from '@vp/inference/embed';
import type { EmbedderReply, EmbedderRequest, EmbedderSetup } from './image-embedder.messages.ts';

const setup = workerData as EmbedderSetup;

const loading = openEmbedder(setup.file, { threads: setup.threads, executionProvider: 'cpu' });
loading.then(
  () => parentPort!.postMessage({ kind: 'ready' } satisfies EmbedderReply),
  (error: Error) =>
    parentPort!.postMessage({ kind: 'failed', message: error.message.split('\n')[0] } satisfies EmbedderReply),
);

parentPort!.on('message', (request: EmbedderRequest) => {
  void loading
    .then(async (model): Promise<EmbedderReply> => ({
      kind: 'embedded',
      id: request.id,
      ...(await embedImages(model, request.images, setup)),
    }))
    .catch((error: Error): EmbedderReply => ({ kind: 'failed', id: request.id, message: error.message.split('\n')[0] }))
    .then((reply) =>
      parentPort!.postMessage(
        reply,
        reply.kind === 'embedded' ? reply.vectors.map((vector) => vector.buffer as ArrayBuffer) : [],
      ),
    );
});
