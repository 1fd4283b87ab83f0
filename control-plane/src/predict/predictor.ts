import type { EntityManager } from '@mikro-orm/postgresql';
import type { ModelInfo, Prediction, PredictOptions } from '@vp/inference';
import type { ModelRef } from '../models/model-access.ts';

/** One model run on one image: the prediction in original-image pixels, and what the export says of the model. */
export interface ModelRun {
  prediction: Prediction;
  info: ModelInfo;
}

/**
 * The process's inference: runs a model's ONNX export with onnxruntime-node off the event loop, sessions cached per
 * model and evicted by memory. The export is the one made automatically when the model got weights; a run before it
 * exists waits for it, and throws ServiceUnavailable (503) when no host can make it. Image bytes that are not a whole,
 * bounded image throw Invalid (400); an export that cannot be run (refused at load, or its run fails or floods its
 * workspace's worker) 422.
 */
export interface Predictor {
  run(em: EntityManager, model: ModelRef, image: Uint8Array, options: PredictOptions): Promise<ModelRun>;
  /** Releases every session and worker (shutdown). */
  close(): Promise<void>;
}
