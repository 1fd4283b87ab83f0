import type { Prediction, Task as ModelTask } from '@vp/inference';
import type { Label, Task } from '../images/labels.ts';

/** What the labels are made for: the dataset's task and, for pose, its keypoint layout. */
export interface LabelTarget {
  task: Task;
  kptShape: [number, number] | null;
}

/** Labels in the dataset's format and, index-aligned, the confidence of the prediction each came from. */
export interface PredictedLabels {
  labels: Label[];
  confidences: number[];
}

/** Pose keypoints whose confidence is below this are saved as not labeled (0, 0, 0), as YOLO pose labels mark them. */
const KEYPOINT_VISIBLE = 0.5;

/**
 * Which model tasks can label a dataset task, and how (see predictionLabels). Segment datasets also take boxes, as
 * rectangles (axis-aligned or rotated) a user then refines; detect datasets take the box of any model that has one.
 */
const COMPATIBLE: Record<Task, ModelTask[]> = {
  detect: ['detect', 'segment', 'pose', 'obb'],
  segment: ['segment', 'detect', 'obb'],
  semantic: ['segment'],
  pose: ['pose'],
  obb: ['obb', 'detect', 'segment'],
  classify: ['classify'],
  depth: [],
};

/**
 * Null when a model can label the dataset, else why not (a 422 message): its task must fit (COMPATIBLE), and a pose
 * model must have the dataset's keypoint count (kptShape, known once the model's export was read).
 */
export function labelingMismatch(
  target: LabelTarget,
  model: { task: ModelTask; kptShape?: [number, number] },
): string | null {
  const fits = COMPATIBLE[target.task];
  if (!fits.includes(model.task))
    return `A ${model.task} model cannot label a ${target.task} dataset; use a ${fits.join(', ')} model`;
  if (target.task === 'pose' && target.kptShape && model.kptShape && model.kptShape[0] !== target.kptShape[0]) {
    return `The model predicts ${model.kptShape[0]} keypoints; the dataset has ${target.kptShape[0]} (kpt_shape)`;
  }
  return null;
}

// `|| 0` turns -0 into 0, as labels.ts saves them.
const round = (value: number) => Math.round(value * 1e5) / 1e5 || 0;
const clamp01 = (value: number) => round(Math.min(1, Math.max(0, value)));

/**
 * Converts one image's prediction (original-image pixels, ultralytics' row order) into labels of the dataset's task,
 * normalized and rounded as saved labels are: bbox [cx, cy, w, h], segments and obb corners as x, y pairs, keypoints
 * as the dataset's pairs or triples. `classMap` gives the dataset class of each model class; null drops the row. Rows
 * that would not be valid labels (a box that rounds to nothing, a mask that vanished) are dropped, with their
 * confidence. Call labelingMismatch first: an incompatible pair gives no labels.
 */
export function predictionLabels(
  prediction: Prediction,
  target: LabelTarget,
  classMap: Array<number | null>,
): PredictedLabels {
  const [height, width] = prediction.shape;
  const labels: Label[] = [];
  const confidences: number[] = [];
  const points = (values: number[]) => values.map((value, i) => clamp01(value / (i % 2 === 0 ? width : height)));

  if (target.task === 'classify') {
    const probs = prediction.probs ?? [];
    let top = -1;
    probs.forEach((p, i) => {
      if (classMap[i] !== null && classMap[i] !== undefined && (top < 0 || p > probs[top])) top = i;
    });
    if (top >= 0) {
      labels.push({ classId: classMap[top]! });
      confidences.push(probs[top]);
    }
    return { labels, confidences };
  }

  prediction.classes.forEach((modelClass, row) => {
    const classId = classMap[modelClass];
    if (classId === null || classId === undefined) return;
    const box = prediction.boxes[row];
    // Corners: obb rows are 4 corners; other rows are [x1, y1, x2, y2], whose rectangle is 4 corners too.
    const corners =
      box.length === 8 ? points(box) : points([box[0], box[1], box[2], box[1], box[2], box[3], box[0], box[3]]);
    const xs = corners.filter((_, i) => i % 2 === 0);
    const ys = corners.filter((_, i) => i % 2 === 1);
    const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
    const bbox = [round((minX + maxX) / 2), round((minY + maxY) / 2), round(maxX - minX), round(maxY - minY)];
    if (bbox[2] <= 0 || bbox[3] <= 0) return;

    let label: Label | null = null;
    switch (target.task) {
      case 'detect':
        label = { classId, bbox };
        break;
      case 'obb':
        label = { classId, obb: corners };
        break;
      case 'segment':
      case 'semantic': {
        const polygon = prediction.polygons ? points(prediction.polygons[row] ?? []) : corners;
        if (polygon.length >= 6)
          label = target.task === 'segment' ? { classId, segments: polygon, bbox } : { classId, segments: polygon };
        break;
      }
      case 'pose': {
        const keypoints = poseKeypoints(prediction.keypoints?.[row] ?? [], target.kptShape, width, height);
        if (keypoints) label = { classId, bbox, keypoints };
        break;
      }
    }
    if (label) {
      labels.push(label);
      confidences.push(prediction.confidences[row]);
    }
  });
  return { labels, confidences };
}

/**
 * A pose row's keypoints as the dataset keeps them: pairs, or triples whose visibility is 2 (seen) where the model is
 * confident and 0 (not labeled, at 0, 0) elsewhere. Null when the count differs from the dataset's kpt_shape.
 */
function poseKeypoints(
  rows: number[][],
  kptShape: [number, number] | null,
  width: number,
  height: number,
): number[] | null {
  if (rows.length === 0) return null;
  if (kptShape && kptShape[0] !== rows.length) return null;
  const dims = kptShape?.[1] ?? (rows[0].length === 3 ? 3 : 2);
  return rows.flatMap(([x, y, confidence]) => {
    const xy = [clamp01(x / width), clamp01(y / height)];
    if (dims === 2) return xy;
    const visible = confidence === undefined || confidence >= KEYPOINT_VISIBLE;
    return visible ? [...xy, 2] : [0, 0, 0];
  });
}
