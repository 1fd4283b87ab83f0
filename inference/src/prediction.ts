export interface PredictOptions {
  /** Minimum confidence, as ultralytics' conf. */
  conf: number;
  /** NMS IoU threshold, as ultralytics' iou (ignored by end2end models). */
  iou: number;
  /** Square inference size; rounded up to the model's stride as ultralytics' check_imgsz does; ignored by static exports. Absent: the size the model was exported at. */
  imgsz?: number;
  /** As ultralytics' max_det (300). */
  maxDet?: number;
}

/** One image's result in original-image pixels, in ultralytics' Results layout (rows sorted as ultralytics sorts them). */
export interface Prediction {
  /** [height, width] of the original image. */
  shape: [number, number];
  /** Milliseconds, as ultralytics' Results.speed. */
  speed: { preprocess: number; inference: number; postprocess: number };
  /** detect, segment, pose: [x1, y1, x2, y2] per row; obb: 4 corners [x1, y1, … x4, y4] per row. */
  boxes: number[][];
  confidences: number[];
  classes: number[];
  /** segment: one polygon per row, [x1, y1, x2, y2, …] in pixels (ultralytics' masks.xy); empty when a mask vanished. */
  polygons?: number[][];
  /** pose: per row, per keypoint [x, y] or [x, y, visibility]. */
  keypoints?: number[][][];
  /** classify: a probability per class. */
  probs?: number[];
  /** semantic: per-pixel class index at the original size, row-major. */
  semanticMask?: Uint8Array;
  /** depth: per-pixel depth at the original size, row-major. */
  depth?: Float32Array;
}
