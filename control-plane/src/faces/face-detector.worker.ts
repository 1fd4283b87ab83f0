// The face detector's onnxruntime session, on a thread of its own: onnxruntime-node runs a graph on the calling thread,
// which would hold the control plane's event loop for 10-40 ms per image.
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';
import { decodeCenterFace, type FaceBox } from './centerface.ts';

export interface DetectRequest {
  id: number;
  /** Planar RGB, 0-255, height×width (multiples of 32). */
  pixels: Float32Array;
  width: number;
  height: number;
  /** Cells over this score are faces (centerface.ts FACE_THRESHOLD unless asked otherwise). */
  threshold: number;
}
export type DetectReply = { id: number; faces: FaceBox[] } | { id: number; error: string };

const session = ort.InferenceSession.create(workerData as string, {
  intraOpNumThreads: 1,
  graphOptimizationLevel: 'all',
});

// detect answers every request itself, an error included.
parentPort!.on('message', (request: DetectRequest) => void detect(request));

async function detect({ id, pixels, width, height, threshold }: DetectRequest): Promise<void> {
  try {
    const model = await session;
    const out = await model.run({ [model.inputNames[0]]: new ort.Tensor('float32', pixels, [1, 3, height, width]) });
    const [heatmap, scale, offset] = model.outputNames.slice(0, 3).map((name) => out[name].data as Float32Array);
    parentPort!.postMessage({
      id,
      faces: decodeCenterFace({ heatmap, scale, offset }, width, height, threshold),
    } satisfies DetectReply);
  } catch (error) {
    parentPort!.postMessage({
      id,
      error: error instanceof Error ? error.message : String(error),
    } satisfies DetectReply);
  }
}
