// The models/yolo/*/predict.py postprocess of each task, on the raw outputs of one image: NMS (or the end2end rows),
// boxes back to the original image, masks, keypoints, rotated corners.
import type { Tensor } from 'onnxruntime-node';
import { maskPolygons } from './masks.ts';
import type { ModelInfo } from './model-info.ts';
import { type Detections, nonMaxSuppression } from './nms.ts';
import type { Prediction } from './prediction.ts';
import { scaler, scaleX, scaleY } from './scale.ts';
import { semanticClassMap } from './semantic.ts';
import { depthMap } from './depth.ts';

export interface PostprocessOptions {
  conf: number;
  iou: number;
  maxDet: number;
}

type Rows = Omit<Prediction, 'speed'>;

/** Detections (with their extra channels: mask coefficients, keypoints) from the first output. */
interface Candidates extends Detections {
  extras: Float32Array;
  extraCount: number;
}

export function postprocess(
  info: ModelInfo,
  outputs: Tensor[],
  input: [number, number],
  original: [number, number],
  options: PostprocessOptions,
): Rows {
  if (info.task === 'depth') {
    return { shape: original, boxes: [], confidences: [], classes: [], depth: depthMap(outputs[0], input, original) };
  }
  if (info.task === 'semantic') {
    return {
      shape: original,
      boxes: [],
      confidences: [],
      classes: [],
      semanticMask: semanticClassMap(outputs[0], input, original),
    };
  }
  if (info.task === 'classify') {
    // A probability that is not a number (a hostile or broken graph) is 0: the answer stays JSON.
    const probs = Array.from((outputs[0].data as Float32Array).subarray(0, info.names.length), (p) =>
      Number.isFinite(p) ? p : 0,
    );
    return { shape: original, boxes: [], confidences: [], classes: [], probs };
  }
  const candidates = info.end2end ? endToEndRows(info, outputs[0], options) : nmsRows(info, outputs[0], options);
  const s = scaler(input, original);
  const n = candidates.scores.length;
  const rows: Rows = { shape: original, boxes: [], confidences: [], classes: [] };
  let keep = Array.from({ length: n }, (_, k) => k).filter((k) => usable(candidates, k, info.names.length));
  if (info.task === 'segment') {
    // Masks are made from the boxes in input pixels, before they are scaled; rows whose mask is empty are dropped.
    const protos = outputs[1];
    const polygons = maskPolygons(candidates, protos.data as Float32Array, protos.dims as number[], input, s);
    keep = keep.filter((k) => polygons[k] !== null);
    rows.polygons = keep.map((k) => polygons[k]!);
  }
  for (const k of keep) {
    const b = candidates.boxes.subarray(k * 4, k * 4 + 4);
    if (info.task === 'obb') {
      rows.boxes.push(
        corners(
          scaleX(s, b[0], false),
          scaleY(s, b[1], false),
          Math.fround(b[2] / s.gainX),
          Math.fround(b[3] / s.gainY),
          candidates.angles![k],
        ),
      );
    } else {
      rows.boxes.push([scaleX(s, b[0]), scaleY(s, b[1]), scaleX(s, b[2]), scaleY(s, b[3])]);
    }
    rows.confidences.push(candidates.scores[k]);
    rows.classes.push(candidates.classes[k]);
  }
  if (info.task === 'pose') {
    const [count, dims] = info.kptShape ?? [17, 3];
    rows.keypoints = keep.map((k) => {
      const base = k * candidates.extraCount;
      return Array.from({ length: count }, (_, p) => {
        const at = base + p * dims;
        const point = [scaleX(s, candidates.extras[at]), scaleY(s, candidates.extras[at + 1])];
        if (dims === 3) point.push(candidates.extras[at + 2]);
        return point;
      });
    });
  }
  return rows;
}

/**
 * A row JSON can carry and a class name can label: NaN or ±Infinity anywhere in it (what a broken or hostile graph can
 * give), or a class the model does not name, and the row is dropped.
 */
function usable(candidates: Candidates, k: number, classes: number): boolean {
  const finite = (values: ArrayLike<number>) => Array.prototype.every.call(values, Number.isFinite);
  const cls = candidates.classes[k];
  return (
    Number.isFinite(candidates.scores[k]) &&
    cls >= 0 &&
    cls < classes &&
    finite(candidates.boxes.subarray(k * 4, k * 4 + 4)) &&
    (!candidates.angles || Number.isFinite(candidates.angles[k])) &&
    finite(candidates.extras.subarray(k * candidates.extraCount, (k + 1) * candidates.extraCount))
  );
}

/** ops.xywhr2xyxyxyxy: the 4 corners of a rotated box, in float32 as torch computes them. */
function corners(x: number, y: number, w: number, h: number, angle: number): number[] {
  const f = Math.fround;
  const cos = f(Math.cos(angle));
  const sin = f(Math.sin(angle));
  const v1x = f(f(w / 2) * cos);
  const v1y = f(f(w / 2) * sin);
  const v2x = f(f(-h / 2) * sin);
  const v2y = f(f(h / 2) * cos);
  return [
    f(f(x + v1x) + v2x),
    f(f(y + v1y) + v2y),
    f(f(x + v1x) - v2x),
    f(f(y + v1y) - v2y),
    f(f(x - v1x) - v2x),
    f(f(y - v1y) - v2y),
    f(f(x - v1x) + v2x),
    f(f(y - v1y) + v2y),
  ];
}

function extraCountOf(info: ModelInfo, channels: number, boxChannels: number): { nc: number; extra: number } {
  const nc = info.task === 'detect' ? channels - boxChannels : info.names.length;
  return { nc, extra: channels - boxChannels - nc };
}

/** A classic head [1, 4 + nc + extra, N] through non_max_suppression. */
function nmsRows(info: ModelInfo, output: Tensor, options: PostprocessOptions): Candidates {
  const [, channels, anchors] = output.dims as number[];
  const data = output.data as Float32Array;
  const { nc, extra } = extraCountOf(info, channels, 4);
  const detections = nonMaxSuppression(data, channels, anchors, { ...options, nc, rotated: info.task === 'obb' });
  const extraCount = info.task === 'obb' ? 0 : extra;
  const extras = new Float32Array(detections.anchors.length * extraCount);
  for (let r = 0; r < detections.anchors.length; r++) {
    for (let e = 0; e < extraCount; e++)
      extras[r * extraCount + e] = data[(4 + nc + e) * anchors + detections.anchors[r]];
  }
  return { ...detections, extras, extraCount };
}

/** An end2end head [1, maxDet, 6 + extra] (x1 y1 x2 y2 or obb cx cy w h, score, class, extras): rows above conf, in order. */
function endToEndRows(info: ModelInfo, output: Tensor, options: PostprocessOptions): Candidates {
  const [, count, width] = output.dims as number[];
  const data = output.data as Float32Array;
  const picked: number[] = [];
  for (let r = 0; r < count && picked.length < options.maxDet; r++)
    if (data[r * width + 4] > options.conf && data[r * width + 4] !== Infinity) picked.push(r);
  const rotated = info.task === 'obb';
  const extraCount = rotated ? 0 : width - 6;
  const result: Candidates = {
    anchors: Int32Array.from(picked),
    classes: Int32Array.from(picked, (r) => data[r * width + 5]),
    scores: Float32Array.from(picked, (r) => data[r * width + 4]),
    boxes: new Float32Array(picked.length * 4),
    angles: rotated ? Float32Array.from(picked, (r) => data[r * width + width - 1]) : undefined,
    extras: new Float32Array(picked.length * extraCount),
    extraCount,
  };
  picked.forEach((r, k) => {
    result.boxes.set(data.subarray(r * width, r * width + 4), k * 4);
    result.extras.set(data.subarray(r * width + 6, r * width + 6 + extraCount), k * extraCount);
  });
  return result;
}
