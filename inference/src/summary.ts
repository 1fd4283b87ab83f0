import type { Prediction } from './prediction.ts';
import { npRoundTo, pyRoundTo } from './py-math.ts';

export interface SummaryOptions {
  /** Coordinates as 0-1 fractions of the image width and height. */
  normalize: boolean;
  /** Rounding of every number, as ultralytics' Results.summary(decimals). */
  decimals: number;
}

/** One row of ultralytics' Results.summary(): the shape of `results[]` in the predict response. */
export interface SummaryRow {
  name: string;
  class: number;
  confidence?: number;
  pixel_ratio?: number;
  box?: { x1: number; y1: number; x2: number; y2: number; x3?: number; y3?: number; x4?: number; y4?: number };
  segments?: { x: number[]; y: number[] };
  keypoints?: { x: number[]; y: number[]; visible?: number[] };
}

type Box = NonNullable<SummaryRow['box']>;

/** ultralytics' Results.summary(normalize, decimals) for one prediction (classify: the top 5). */
export function summarize(prediction: Prediction, names: string[], options: SummaryOptions): SummaryRow[] {
  const { decimals } = options;
  const round = (value: number) => pyRoundTo(value, decimals);
  if (prediction.probs) {
    const order = prediction.probs
      .map((_, index) => index)
      .sort((a, b) => prediction.probs![b] - prediction.probs![a] || a - b);
    return order
      .slice(0, 5)
      .map((index) => ({ name: names[index], class: index, confidence: round(prediction.probs![index]) }));
  }
  if (prediction.semanticMask) return pixelRatios(prediction.semanticMask, names, round);
  const [h, w] = options.normalize ? prediction.shape : [1, 1];
  // masks.xy and keypoints are float32 arrays in ultralytics, divided in float32, then rounded by NumPy.
  const npRound = (value: number, by: number) => npRoundTo(Math.fround(value / by), decimals);
  return prediction.boxes.map((coords, i) => {
    const box: Record<string, number> = {};
    for (let j = 0; j < coords.length / 2; j++) {
      box[`x${j + 1}`] = round(coords[2 * j] / w);
      box[`y${j + 1}`] = round(coords[2 * j + 1] / h);
    }
    const row: SummaryRow = {
      name: names[prediction.classes[i]],
      class: prediction.classes[i],
      confidence: round(prediction.confidences[i]),
      box: box as Box,
    };
    const polygon = prediction.polygons?.[i];
    if (polygon) {
      row.segments = {
        x: polygon.filter((_, k) => k % 2 === 0).map((x) => npRound(x, w)),
        y: polygon.filter((_, k) => k % 2 === 1).map((y) => npRound(y, h)),
      };
    }
    const points = prediction.keypoints?.[i];
    if (points) {
      row.keypoints = { x: points.map((p) => npRound(p[0], w)), y: points.map((p) => npRound(p[1], h)) };
      if (points[0]?.length === 3) row.keypoints.visible = points.map((p) => npRoundTo(p[2], decimals));
    }
    return row;
  });
}

/** Per class present in the map, its share of the pixels (class order); a binary model reports its foreground (1) only. */
function pixelRatios(mask: Uint8Array, names: string[], round: (value: number) => number): SummaryRow[] {
  const counts = new Float64Array(256);
  for (const value of mask) counts[value]++;
  const rows: SummaryRow[] = [];
  for (let id = 0; id < 256; id++) {
    if (counts[id] === 0) continue;
    let cls = id;
    if (names.length === 1) {
      if (id !== 1) continue;
      cls = 0;
    } else if (id >= names.length) {
      continue;
    }
    rows.push({ name: names[cls], class: cls, pixel_ratio: round(counts[id] / mask.length) });
  }
  return rows;
}
