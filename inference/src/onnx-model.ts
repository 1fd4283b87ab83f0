import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import ort from 'onnxruntime-node';
import { classifyTensor } from './classify-transform.ts';
import type { DecodedImage } from './decode.ts';
import { type Letterbox, letterbox, letterboxShape } from './letterbox.ts';
import { anchorCount, modelInfo } from './model-info.ts';
import type { ModelInfo } from './model-info.ts';
import { checkInputs, checkOutputs, checkOutputTensors } from './onnx-io.ts';
import { readOnnxMetadata } from './onnx-metadata.ts';
import { postprocess } from './postprocess.ts';
import type { Prediction, PredictOptions } from './prediction.ts';

/** Where onnxruntime runs the graph: cuda needs a GPU, its drivers and onnxruntime-node's CUDA provider. */
export type ExecutionProvider = 'cpu' | 'cuda';

export interface SessionOptions {
  /** Default cpu. */
  executionProvider?: ExecutionProvider;
  /** onnxruntime intra-op threads; 0 lets onnxruntime choose (one per core). */
  intraOpThreads?: number;
  /**
   * Whether idle intra-op threads spin between operators (onnxruntime's default, true): lowest latency; false gives
   * the cores back at once where several sessions run at the same time on the same cores.
   */
  spinning?: boolean;
}

/** The file is not an ONNX export this package can run (not ONNX, no ultralytics metadata, an unknown task). */
export class InvalidModel extends Error {
  override name = 'InvalidModel';
}

/** An ultralytics ONNX export loaded into an onnxruntime-node session. */
export class OnnxModel {
  readonly info: ModelInfo;
  private readonly session: ort.InferenceSession;
  /** The input tensor of the last finished run, written over by the next letterbox of the same size. */
  private spare: Float32Array | undefined;

  private constructor(info: ModelInfo, session: ort.InferenceSession) {
    this.info = info;
    this.session = session;
  }

  /** Reads the export's metadata and opens a session (on the CPU unless told otherwise); InvalidModel when the file is not a usable export. */
  static async load(file: string, options: SessionOptions = {}): Promise<OnnxModel> {
    const bytes = await readFile(file);
    let props: Map<string, string>;
    let session: ort.InferenceSession;
    try {
      props = readOnnxMetadata(bytes);
    } catch (error) {
      throw new InvalidModel(
        `not an ONNX model onnxruntime can load: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    // The metadata is checked before onnxruntime sees the file: a tenant's names or sizes must not cost more than their bounds.
    let metadata: ModelInfo;
    try {
      metadata = modelInfo(props, true);
    } catch (error) {
      throw new InvalidModel(error instanceof Error ? error.message : String(error));
    }
    try {
      session = await ort.InferenceSession.create(bytes, {
        executionProviders: [options.executionProvider ?? 'cpu'],
        graphOptimizationLevel: 'all',
        intraOpNumThreads: options.intraOpThreads ?? 0,
        executionMode: 'sequential',
        // onnxruntime's arena keeps a run's peak for the next run (without it yolo11n at 640 px ran 10-25% slower, its
        // tensors mapped afresh each time): the pool counts that peak in the session's footprint and bounds the process.
        enableCpuMemArena: true,
        // Spinning threads bridge the gaps between a run's operators; past its end they would keep the cores from
        // what answers the request (the worker's reply, the server's HTTP), so they stop as the run returns.
        extra: {
          session: options.spinning === false ? { intra_op: { allow_spinning: '0' } } : { force_spinning_stop: '1' },
        },
      });
    } catch (error) {
      throw new InvalidModel(
        `not an ONNX model onnxruntime can load: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      );
    }
    try {
      const dynamicInput = checkInputs(session.inputMetadata, metadata);
      const info = { ...metadata, dynamic: metadata.dynamic && dynamicInput };
      checkOutputs(session.outputMetadata, info);
      return new OnnxModel(info, session);
    } catch (error) {
      await session.release();
      throw new InvalidModel(error instanceof Error ? error.message : String(error));
    }
  }

  /** Letterbox (or classify transforms), one session run, post-processing: what ultralytics' predict returns. */
  async predict(image: DecodedImage, options: PredictOptions): Promise<Prediction> {
    const started = performance.now();
    const { tensor, height, width } =
      this.info.task === 'classify'
        ? classifyTensor(image, this.inputSize(options.imgsz))
        : this.letterbox(image, options.imgsz);
    const prepared = performance.now();
    const feeds = { [this.session.inputNames[0]]: new ort.Tensor('float32', tensor, [1, 3, height, width]) };
    if (this.spare === tensor) this.spare = undefined; // taken: a concurrent predict must not write into it
    let results: ort.InferenceSession.ReturnType;
    try {
      results = await this.session.run(feeds);
    } catch (error) {
      // The graph is the tenant's: a run that fails (shapes it cannot reshape, a node it cannot compute) is the model's fault.
      throw new InvalidModel(
        `the model's graph failed to run: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
      );
    }
    this.spare = tensor;
    const ran = performance.now();
    const outputs = this.session.outputNames.map((name) => results[name]);
    try {
      checkOutputTensors(outputs, this.info);
    } catch (error) {
      for (const output of outputs) output.dispose();
      throw new InvalidModel(error instanceof Error ? error.message : String(error));
    }
    const rows = postprocess(this.info, outputs, [height, width], [image.height, image.width], {
      conf: options.conf,
      iou: options.iou,
      maxDet: options.maxDet ?? 300,
    });
    for (const output of outputs) output.dispose();
    return {
      ...rows,
      speed: { preprocess: prepared - started, inference: ran - prepared, postprocess: performance.now() - ran },
    };
  }

  /**
   * ultralytics predicts with rect=True: a dynamic export gets the minimum rectangle (LetterBox auto), a static one its
   * full size. An end2end graph has its TopK k fixed at export (min(300, anchors at the export size)); where the
   * rectangle (or a smaller square) has fewer anchors, onnxruntime fails, in ultralytics too. There we letterbox to
   * the full square, or the export size, so that the model answers instead of failing.
   */
  private letterbox(image: DecodedImage, imgsz: number | undefined): Letterbox {
    const { stride, dynamic, topK } = this.info;
    let size = this.inputSize(imgsz);
    // Depth predicts on the image stretched to the full size (DepthPredictor.scale_fill).
    if (this.info.task === 'depth') return letterbox(image, size, false, stride, true, this.spare);
    if (!dynamic || topK === undefined) return letterbox(image, size, dynamic, stride, false, this.spare);
    const rect = letterboxShape(image.height, image.width, size, true, stride);
    if (anchorCount([rect.height, rect.width], stride) >= topK)
      return letterbox(image, size, true, stride, false, this.spare);
    if (anchorCount(size, stride) < topK) size = this.info.imgsz;
    return letterbox(image, size, false, stride, false, this.spare);
  }

  /**
   * check_imgsz: a dynamic export takes the requested size rounded up to the stride, by default the size it was exported
   * at (the checkpoint's training size, as ultralytics predicts a .pt); a static one its own size.
   */
  private inputSize(imgsz = Math.max(...this.info.imgsz)): [number, number] {
    if (!this.info.dynamic) return this.info.imgsz;
    const size = Math.max(Math.ceil(imgsz / this.info.stride) * this.info.stride, this.info.stride);
    return [size, size];
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
