// GET /api/models/{owner}/{project}/{model}?analysis=1: the per-image validation results a training reported
// (rows of [image hash, tp, fp, fn]), summarised as the worst- and best-scoring cohorts by F1; the worst are what
// GET .../similar-images searches like.
import type { z } from 'zod';
import type { ValidationExtremes } from './model.entity.ts';
import type { ModelAnalysis } from './model.schemas.ts';

type Analysis = NonNullable<z.input<typeof ModelAnalysis>>;
type Cohort = Analysis['cohorts']['worst'];

interface Row {
  hash: string;
  tp: number;
  fp: number;
  fn: number;
}

/** The trainer sends up to 100 images at each end. */
const COHORT_SIZE = 100;

const count = (value: unknown) =>
  typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0;

/** A stored row: the trainer's [hash, tp, fp, fn] as saved ({ image, tp, fp, fn }), or an array from its extremes. */
function row(value: unknown): Row | null {
  if (Array.isArray(value)) {
    const cells: unknown[] = value;
    const [image, tp, fp, fn] = cells;
    return row({ image, tp, fp, fn });
  }
  if (!value || typeof value !== 'object') return null;
  const { image, tp, fp, fn } = value as Record<string, unknown>;
  return typeof image === 'string' ? { hash: image, tp: count(tp), fp: count(fp), fn: count(fn) } : null;
}

/** F1 of one image; an image with nothing to find and nothing found is perfect. */
const f1 = ({ tp, fp, fn }: Row) => (tp + fp + fn === 0 ? 1 : (2 * tp) / (2 * tp + fp + fn));

function stats(values: number[]) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => {
    const position = q * (sorted.length - 1);
    const low = Math.floor(position);
    return sorted[low]! + (sorted[Math.ceil(position)]! - sorted[low]!) * (position - low);
  };
  return {
    count: sorted.length,
    min: sorted[0]!,
    p25: at(0.25),
    median: at(0.5),
    p75: at(0.75),
    max: sorted.at(-1)!,
    mean: sorted.reduce((sum, value) => sum + value, 0) / sorted.length,
  };
}

function cohort(rows: Row[]): Cohort {
  const sum = (key: 'tp' | 'fp' | 'fn') => rows.reduce((total, item) => total + item[key], 0);
  return {
    count: rows.length,
    matched: rows.length,
    metrics: { tp: sum('tp'), fp: sum('fp'), fn: sum('fn'), f1: stats(rows.map(f1)) },
    examples: rows.map((item) => ({ ...item, f1: f1(item), isEmptyGroundTruth: item.tp + item.fn === 0 })),
  };
}

/** The recorded rows and the cohorts at each end (the trainer's, else the rows ranked by F1); null when none were recorded. */
function ranked(
  stored: Array<Record<string, unknown>> | null | undefined,
  summary: ValidationExtremes | null | undefined,
) {
  const rows = (stored ?? []).map(row).filter((item): item is Row => item !== null);
  if (rows.length === 0) return null;
  const byF1 = [...rows].sort((a, b) => f1(a) - f1(b) || a.hash.localeCompare(b.hash));
  const fromTrainer = (list: unknown[] | undefined) => list?.map(row).filter((item): item is Row => item !== null);
  const worst = fromTrainer(summary?.extremes?.worst) ?? byF1.slice(0, COHORT_SIZE);
  const best = fromTrainer(summary?.extremes?.best) ?? byF1.slice(-COHORT_SIZE).reverse();
  return { rows, worst, best };
}

/** The hashes of the worst cohort, worst first (GET .../similar-images); null when the training recorded no per-image rows. */
export function worstHashes(
  stored: Array<Record<string, unknown>> | null | undefined,
  summary: ValidationExtremes | null | undefined,
): string[] | null {
  return ranked(stored, summary)?.worst.map((item) => item.hash) ?? null;
}

/** null when the training recorded no per-image rows. */
export function modelAnalysis(
  stored: Array<Record<string, unknown>> | null | undefined,
  summary: ValidationExtremes | null | undefined,
): z.input<typeof ModelAnalysis> {
  const found = ranked(stored, summary);
  if (!found) return null;
  const { rows, worst, best } = found;
  const population = Math.max(count(summary?.population), rows.length);
  return {
    population,
    retained: rows.length,
    matched: rows.length,
    unmatched: 0,
    traitsAvailable: false,
    sourceSplit: 'val',
    coverage: { mode: population > rows.length ? 'sampled' : 'full', omittedMiddle: 0, unmatchedExtremes: 0 },
    scatterSample: { eligible: rows.length, rows: rows.map((item) => [item.hash, item.tp, item.fp, item.fn]) },
    cohorts: { worst: cohort(worst), best: cohort(best) },
    comparisons: null,
  };
}
