// @vp/inference/request: reading a predict request and writing its answer, shared by the control plane's predict and
// a deployment's inference server. Loads sharp, never onnxruntime (the control plane's main thread imports it).
export type { PredictInput, UrlFetcher } from './predict-input.ts';
export { readPredictInput } from './predict-input.ts';
export type { ByteBound } from './predict-input-error.ts';
export { invalid, invalidBody, PredictInputError, tooLarge } from './predict-input-error.ts';
export { PredictParameters } from './predict-parameters.ts';
export { predictResponse } from './predict-response.ts';
