import type { Prediction } from './prediction.ts';

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

/** ultralytics' Results.summary(normalize, decimals) for one prediction (classify: the top 5). */
export function summarize(prediction: Prediction, names: string[], options: SummaryOptions): SummaryRow[] {
  void prediction;
  void names;
  void options;
  throw new Error('not built yet');
}
