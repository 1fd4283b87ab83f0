import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { FACE_THRESHOLD, type FaceBox } from './centerface.ts';
import type { DetectReply, DetectRequest } from './face-detector.worker.ts';

/** The detector's input is at most this many pixels on its long side: 41 ms per image on one core (i20 research). */
const DETECT_PX = 640;
const STRIDE_ALIGN = 32;

/** No face detector is installed (FACE_DETECTOR_PATH, or installer/models/build-models.sh never ran). */
export class FaceDetectorMissing extends Error {}

/** Faces of an upright image, in its pixels. */
export interface Detection {
  width: number;
  height: number;
  faces: FaceBox[];
}

/**
 * CenterFace on one worker thread, started at the first image and shared by every job of the process. The image is
 * decoded upright (EXIF orientation applied) and squashed to multiples of 32 under DETECT_PX.
 */
export class FaceDetector {
  private readonly modelPath: string | undefined;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (faces: FaceBox[]) => void; reject: (error: Error) => void }>();
  private nextId = 0;

  constructor(modelPath: string | undefined) {
    this.modelPath = modelPath;
  }

  /** Throws FaceDetectorMissing when there is no model file to run. */
  requireModel(): void {
    if (!this.modelPath || !existsSync(this.modelPath)) {
      throw new FaceDetectorMissing(
        `Faces cannot be blurred: no face detector at ${this.modelPath ?? '.cache/models/*/face-detector.onnx'} (set FACE_DETECTOR_PATH or run installer/models/build-models.sh)`,
      );
    }
  }

  /** `input`: image bytes or a file whose pixels have been checked to be decodable within budget; faces score over `threshold`. */
  async detect(input: Buffer | string, threshold = FACE_THRESHOLD): Promise<Detection> {
    this.requireModel();
    const meta = await sharp(input).metadata();
    const [width, height] = (meta.orientation ?? 1) >= 5 ? [meta.height, meta.width] : [meta.width, meta.height];
    const k = Math.min(1, DETECT_PX / Math.max(width, height));
    const w = Math.max(STRIDE_ALIGN, Math.round((width * k) / STRIDE_ALIGN) * STRIDE_ALIGN);
    const h = Math.max(STRIDE_ALIGN, Math.round((height * k) / STRIDE_ALIGN) * STRIDE_ALIGN);
    const rgb = await sharp(input, { failOn: 'error' })
      .rotate()
      .removeAlpha()
      .toColourspace('srgb')
      .resize(w, h, { fit: 'fill' })
      .raw()
      .toBuffer();
    const plane = w * h;
    const pixels = new Float32Array(3 * plane);
    for (let i = 0; i < plane; i++) for (let c = 0; c < 3; c++) pixels[c * plane + i] = rgb[i * 3 + c];
    const faces = await this.run({ id: this.nextId++, pixels, width: w, height: h, threshold });
    const sx = width / w;
    const sy = height / h;
    return {
      width,
      height,
      faces: faces.map((f) => ({ score: f.score, x1: f.x1 * sx, y1: f.y1 * sy, x2: f.x2 * sx, y2: f.y2 * sy })),
    };
  }

  private run(request: DetectRequest): Promise<FaceBox[]> {
    const worker = this.start();
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      worker.postMessage(request, [request.pixels.buffer as ArrayBuffer]);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./face-detector.worker.ts', import.meta.url), { workerData: this.modelPath });
    worker.unref();
    worker.on('message', (reply: DetectReply) => {
      const waiting = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ('error' in reply) waiting?.reject(new Error(`Face detector failed: ${reply.error}`));
      else waiting?.resolve(reply.faces);
    });
    const lost = (error: Error) => {
      this.worker = undefined;
      for (const waiting of this.pending.values()) waiting.reject(error);
      this.pending.clear();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`Face detector thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }
}
