// @vp/inference/pool: worker processes that decode and run ONNX sessions off the caller's event loop. Importing it loads
// no onnxruntime: its workers do, on the first run.
export type { PoolOptions } from './inference-pool.ts';
export { InferenceError, InferencePool, MAX_IMAGE_PIXELS } from './inference-pool.ts';
