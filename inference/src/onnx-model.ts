import type { DecodedImage } from './decode.ts';
import type { ModelInfo } from './model-info.ts';
import type { Prediction, PredictOptions } from './prediction.ts';

export interface SessionOptions {
  /** onnxruntime intra-op threads; 0 lets onnxruntime choose (one per core). */
  intraOpThreads?: number;
}

/** An ultralytics ONNX export loaded into an onnxruntime-node session. */
export class OnnxModel {
  readonly info: ModelInfo;

  private constructor(info: ModelInfo) {
    this.info = info;
  }

  /** Reads the export's metadata and opens a session (CPU; CUDA when the runtime has it and `gpu` is set). */
  static async load(file: string, options: SessionOptions = {}): Promise<OnnxModel> {
    void file;
    void options;
    throw new Error('not built yet');
  }

  /** Letterbox (or classify transforms), one session run, post-processing: what ultralytics' predict returns. */
  async predict(image: DecodedImage, options: PredictOptions): Promise<Prediction> {
    void image;
    void options;
    throw new Error('not built yet');
  }

  async release(): Promise<void> {}
}
