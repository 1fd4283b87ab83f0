// ultralytics' non_max_suppression (utils/nms.py) for one image of a raw YOLO head [4 + nc + extra, N]: candidates by
// best class score > conf, boxes offset by class × max_wh so classes never suppress each other, greedy NMS as
// torchvision.ops.nms (axis-aligned) or TorchNMS.fast_nms with batch_probiou (obb), then max_det.

/** Kept candidates, most confident first: anchor index, class, score, and the box in input pixels (xyxy, or xywh for obb). */
export interface Detections {
  anchors: Int32Array;
  classes: Int32Array;
  scores: Float32Array;
  /** 4 numbers per detection: x1 y1 x2 y2 (axis-aligned) or cx cy w h (rotated; the angle is in `angles`). */
  boxes: Float32Array;
  angles?: Float32Array;
}

export interface NmsOptions {
  conf: number;
  iou: number;
  maxDet: number;
  /** Number of classes (the channels after the 4 box channels and before the extras). */
  nc: number;
  /** obb: the last channel is the angle, boxes stay xywh, rotated IoU. */
  rotated: boolean;
}

const MAX_NMS = 30000;
const MAX_WH = 7680;

/** `output` is channel-major [channels, anchors] (the batch's first image of a [1, C, N] tensor). */
export function nonMaxSuppression(
  output: Float32Array,
  channels: number,
  anchors: number,
  options: NmsOptions,
): Detections {
  const { conf, nc } = options;
  // Each anchor's best class, read class row by class row: the rows lie one after another in memory, an anchor's
  // scores `anchors` apart, so walking anchors within a row reads the tensor in order (and the first best class wins).
  const bestScore = output.slice(4 * anchors, 5 * anchors);
  const bestClass = new Int32Array(anchors);
  for (let c = 1; c < nc; c++) {
    const row = (4 + c) * anchors;
    for (let a = 0; a < anchors; a++) {
      const score = output[row + a];
      if (score > bestScore[a]) {
        bestScore[a] = score;
        bestClass[a] = c;
      }
    }
  }
  const candidates: number[] = [];
  const classOf: number[] = [];
  const scoreOf: number[] = [];
  for (let a = 0; a < anchors; a++) {
    const best = bestScore[a];
    // A score that is not a finite number ranks nothing (a broken graph's NaN or Infinity).
    if (best > conf && best !== Infinity) {
      candidates.push(a);
      classOf.push(bestClass[a]);
      scoreOf.push(best);
    }
  }
  let order = candidates.map((_, k) => k);
  // Most confident first (torch sorts by score descending).
  order.sort((p, q) => scoreOf[q] - scoreOf[p]);
  if (order.length > MAX_NMS) order = order.slice(0, MAX_NMS);
  const n = order.length;
  const boxes = new Float64Array(n * 4);
  const angles = options.rotated ? new Float64Array(n) : undefined;
  for (let k = 0; k < n; k++) {
    const a = candidates[order[k]];
    const x = output[a];
    const y = output[anchors + a];
    const w = output[2 * anchors + a];
    const h = output[3 * anchors + a];
    if (options.rotated) {
      boxes.set([x, y, w, h], k * 4);
      angles![k] = output[(channels - 1) * anchors + a];
    } else {
      const hw = Math.fround(w / 2);
      const hh = Math.fround(h / 2);
      boxes.set([Math.fround(x - hw), Math.fround(y - hh), Math.fround(x + hw), Math.fround(y + hh)], k * 4);
    }
  }
  const keep = options.rotated
    ? fastRotatedNms(
        boxes,
        angles!,
        order.map((k) => classOf[k]),
        options.iou,
      )
    : greedyNms(
        boxes,
        order.map((k) => classOf[k]),
        options.iou,
      );
  const count = Math.min(keep.length, options.maxDet);
  const result: Detections = {
    anchors: new Int32Array(count),
    classes: new Int32Array(count),
    scores: new Float32Array(count),
    boxes: new Float32Array(count * 4),
    angles: options.rotated ? new Float32Array(count) : undefined,
  };
  for (let r = 0; r < count; r++) {
    const k = keep[r];
    result.anchors[r] = candidates[order[k]];
    result.classes[r] = classOf[order[k]];
    result.scores[r] = scoreOf[order[k]];
    result.boxes.set(boxes.subarray(k * 4, k * 4 + 4), r * 4);
    if (angles) result.angles![r] = angles[k];
  }
  return result;
}

/** torchvision.ops.nms on boxes sorted by score (offset by class): keep a box unless a kept one overlaps it with IoU > iou. */
function greedyNms(boxes: Float64Array, classes: number[], iou: number): number[] {
  const n = classes.length;
  const suppressed = new Uint8Array(n);
  const keep: number[] = [];
  const shifted = new Float64Array(n * 4);
  const areas = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const offset = classes[k] * MAX_WH;
    for (let j = 0; j < 4; j++) shifted[k * 4 + j] = Math.fround(boxes[k * 4 + j] + offset);
    areas[k] = Math.fround(
      Math.fround(shifted[k * 4 + 2] - shifted[k * 4]) * Math.fround(shifted[k * 4 + 3] - shifted[k * 4 + 1]),
    );
  }
  for (let i = 0; i < n; i++) {
    if (suppressed[i]) continue;
    keep.push(i);
    const x1 = shifted[i * 4];
    const y1 = shifted[i * 4 + 1];
    const x2 = shifted[i * 4 + 2];
    const y2 = shifted[i * 4 + 3];
    for (let j = i + 1; j < n; j++) {
      if (suppressed[j]) continue;
      const w = Math.min(x2, shifted[j * 4 + 2]) - Math.max(x1, shifted[j * 4]);
      if (w <= 0) continue;
      const h = Math.min(y2, shifted[j * 4 + 3]) - Math.max(y1, shifted[j * 4 + 1]);
      if (h <= 0) continue;
      const inter = Math.fround(w * h);
      if (inter / (areas[i] + areas[j] - inter) > iou) suppressed[j] = 1;
    }
  }
  return keep;
}

/**
 * TorchNMS.fast_nms with batch_probiou, as ultralytics runs it for obb: box j is dropped when ANY more confident box
 * (kept or not) overlaps it with probiou > iou; this is not greedy NMS, and it is replicated as such.
 */
function fastRotatedNms(boxes: Float64Array, angles: Float64Array, classes: number[], iou: number): number[] {
  const n = classes.length;
  const cov = new Float64Array(n * 3);
  const cx = new Float64Array(n);
  const cy = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const offset = classes[k] * MAX_WH;
    cx[k] = Math.fround(boxes[k * 4] + offset);
    cy[k] = Math.fround(boxes[k * 4 + 1] + offset);
    const a = (boxes[k * 4 + 2] * boxes[k * 4 + 2]) / 12;
    const b = (boxes[k * 4 + 3] * boxes[k * 4 + 3]) / 12;
    const cos = Math.cos(angles[k]);
    const sin = Math.sin(angles[k]);
    cov[k * 3] = a * cos * cos + b * sin * sin;
    cov[k * 3 + 1] = a * sin * sin + b * cos * cos;
    cov[k * 3 + 2] = (a - b) * cos * sin;
  }
  const keep: number[] = [];
  for (let j = 0; j < n; j++) {
    let dropped = false;
    for (let i = 0; i < j && !dropped; i++) dropped = probiou(cx, cy, cov, i, j) > iou;
    if (!dropped) keep.push(j);
  }
  return keep;
}

const EPS = 1e-7;

/** utils/metrics.batch_probiou for one pair (1 − Hellinger distance between the boxes' Gaussians). */
export function probiou(
  cx: ArrayLike<number>,
  cy: ArrayLike<number>,
  cov: ArrayLike<number>,
  i: number,
  j: number,
): number {
  const a1 = cov[i * 3];
  const b1 = cov[i * 3 + 1];
  const c1 = cov[i * 3 + 2];
  const a2 = cov[j * 3];
  const b2 = cov[j * 3 + 1];
  const c2 = cov[j * 3 + 2];
  const dx = cx[i] - cx[j];
  const dy = cy[i] - cy[j];
  const denominator = (a1 + a2) * (b1 + b2) - (c1 + c2) ** 2 + EPS;
  const t1 = (((a1 + a2) * dy * dy + (b1 + b2) * dx * dx) / denominator) * 0.25;
  const t2 = (((c1 + c2) * -dx * dy) / denominator) * 0.5;
  const t3 =
    Math.log(
      ((a1 + a2) * (b1 + b2) - (c1 + c2) ** 2) /
        (4 * Math.sqrt(Math.max(a1 * b1 - c1 * c1, 0) * Math.max(a2 * b2 - c2 * c2, 0)) + EPS) +
        EPS,
    ) * 0.5;
  const bd = Math.min(Math.max(t1 + t2 + t3, EPS), 100);
  const hd = Math.sqrt(1 - Math.exp(-bd) + EPS);
  return 1 - hd;
}
