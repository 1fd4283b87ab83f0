// The one model a server serves: its ONNX file, loaded once into the inference pool (a worker process, so decoding,
// letterboxing and post-processing never hold up the server's event loop), then run per request.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ModelInfo, PredictOptions } from '@vp/inference';
import { InferencePool, MAX_IMAGE_PIXELS } from '@vp/inference/pool';
import type { ServerSettings } from './settings.ts';

type Artifact = { key: string; file: string; bytes: number };

export class ServedModel {
  readonly info: ModelInfo;
  /** The file's SHA-256: which revision a health check reached. */
  readonly sha256: string;
  readonly #pool: InferencePool;
  readonly #artifact: Artifact;

  private constructor(pool: InferencePool, artifact: Artifact, info: ModelInfo) {
    this.#pool = pool;
    this.#artifact = artifact;
    this.info = info;
    this.sha256 = artifact.key;
  }

  /** Rejects (InferenceError 'model', or a file error) when the file cannot be served. */
  static async load(settings: ServerSettings): Promise<ServedModel> {
    const file = settings.modelFile;
    const [{ size }, sha256] = await Promise.all([stat(file), fileSha256(file)]);
    // One worker: a session lives in one worker, whose onnxruntime threads run requests concurrently.
    const pool = new InferencePool({
      workers: 1,
      intraOpThreads: settings.intraOpThreads,
      spinning: false,
      cacheBytes: Number.POSITIVE_INFINITY,
      executionProvider: settings.device,
    });
    const artifact: Artifact = { key: sha256, file, bytes: size };
    try {
      return new ServedModel(pool, artifact, await pool.load(artifact));
    } catch (error) {
      await pool.close();
      throw error;
    }
  }

  /** Predict's and the camera's run; imgsz defaults to the export's own (the size the model was trained at), as the control plane's predict does. */
  run(image: Uint8Array, options: { conf: number; iou: number; imgsz?: number | undefined }) {
    const imgsz = options.imgsz ?? Math.max(...this.info.imgsz);
    return this.#pool.run(
      this.#artifact,
      image,
      { conf: options.conf, iou: options.iou, imgsz } satisfies PredictOptions,
      MAX_IMAGE_PIXELS,
    );
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
