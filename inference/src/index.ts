// @vp/inference: YOLO inference on ONNX exports with onnxruntime-node, pre- and post-processing written once to match
// ultralytics' own predict (letterbox, NMS, masks, keypoints, rotated NMS for obb, classify transforms). Used by the
// control plane's predict and batch predict, and by deployments.
export type { DecodedImage, DecodeLimits } from './decode.ts';
export { decodeImage, InvalidImage } from './decode.ts';
export type { ModelInfo, Task } from './model-info.ts';
export type { Prediction, PredictOptions } from './prediction.ts';
export { InvalidModel, OnnxModel } from './onnx-model.ts';
export type { ExecutionProvider, SessionOptions } from './onnx-model.ts';
export type { SummaryOptions, SummaryRow } from './summary.ts';
export { summarize } from './summary.ts';
