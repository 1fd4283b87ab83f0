// The control plane runs onnxruntime and sharp in worker threads (the face detector, the image embedder): @vp/inference
// (sharp + onnxruntime-node) loads and predicts in two workers at once and gives what it gives on the main thread.
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import t from 'tap';
import { decodeImage, OnnxModel } from '../inference/src/index.ts';
import { trainedModel } from './helpers/yolo-models.ts';

// The first run trains the fixture models (a few minutes on 2 cores); later runs take them from .cache/test-models.
t.setTimeout(20 * 60_000);

const WORKER = `
import { parentPort, workerData } from 'node:worker_threads';
import { decodeImage, OnnxModel } from ${JSON.stringify(new URL('../inference/src/index.ts', import.meta.url).href)};
const model = await OnnxModel.load(workerData.onnx, { intraOpThreads: 1, spinning: false });
const image = await decodeImage(workerData.bytes, { maxPixels: 1e7 });
const prediction = await model.predict(image, { conf: 0.001, iou: 0.7, imgsz: 96 });
await model.release();
parentPort.postMessage({ boxes: prediction.boxes, confidences: prediction.confidences, classes: prediction.classes });
`;

t.test('predictions in worker threads equal those on the main thread', async (tt) => {
  const fixture = await trainedModel('detect');
  const bytes = await picture();
  const model = await OnnxModel.load(fixture.onnx, { intraOpThreads: 1 });
  const expected = await model.predict(await decodeImage(bytes, { maxPixels: 1e7 }), {
    conf: 0.001,
    iou: 0.7,
    imgsz: 96,
  });
  await model.release();
  tt.ok(expected.boxes.length > 0, 'the picture has detections');
  const run = () =>
    new Promise<unknown>((resolve, reject) => {
      const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(WORKER)}`), {
        workerData: { onnx: fixture.onnx, bytes },
      });
      worker.once('message', resolve);
      worker.once('error', reject);
    });
  const results = await Promise.all([run(), run()]);
  for (const result of results)
    tt.same(result, { boxes: expected.boxes, confidences: expected.confidences, classes: expected.classes });
});

async function picture(): Promise<Uint8Array> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="120" height="90"><rect width="100%" height="100%" fill="#c4c4bc"/><rect x="10" y="10" width="30" height="30" fill="#e02020"/><circle cx="80" cy="50" r="20" fill="#2040e0"/></svg>`;
  return sharp(Buffer.from(svg)).removeAlpha().png().toBuffer();
}
