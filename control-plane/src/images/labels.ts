import { z } from 'zod';
import { ClassId } from '../datasets/class.schemas.ts';
import { Invalid } from '../http/errors.ts';
import { int } from '../validation/integers.ts';

export const TASKS = ['detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb'] as const;
export type Task = (typeof TASKS)[number];
export const MAX_LABELS_PER_IMAGE = 10_000;

// z.number() refuses NaN and ±Infinity; ranges and lengths are checked in validateLabels, which can name the rule.
const Numbers = (description: string) => z.array(z.number()).meta({ description });
const PositiveInt = int().positive();

/** One label in request bodies: shapes and types only; the per-task rules are validateLabels'. */
export const LabelInput = z
  .strictObject({
    classId: ClassId.meta({ description: 'Index into the dataset class names' }),
    bbox: Numbers('[x_center, y_center, width, height], normalized 0-1').optional(),
    segments: Numbers('Polygon vertices [x1, y1, x2, y2, ...], normalized 0-1; at least 3 points').optional(),
    keypoints: Numbers(
      'Pairs [x1, y1, ...] or triples [x1, y1, v1, ...] (v 0, 1 or 2), one layout per image',
    ).optional(),
    obb: Numbers('Oriented box corners [x1, y1, x2, y2, x3, y3, x4, y4], normalized 0-1').optional(),
    mask: z
      .strictObject({
        // Two of one kind: an array of length 2 rather than a tuple, whose prefixItems schemathesis misreads in responses.
        size: z.array(PositiveInt).length(2).meta({ description: '[height, width] in pixels' }),
        counts: z.array(int().nonnegative()).meta({ description: 'Run lengths; they add up to height × width' }),
      })
      .optional()
      .meta({ description: 'Run-length encoded mask (semantic datasets)' }),
  })
  .meta({
    description: `classId plus the geometry of the dataset task; coordinates are saved rounded to 5 decimals; at most ${MAX_LABELS_PER_IMAGE} per image`,
  });
export type Label = z.output<typeof LabelInput>;

/** What the stats need per label: the enclosing box (normalized) and its point count; null box for classify/mask-only labels. */
export interface LabelShape {
  cx: number;
  cy: number;
  w: number;
  h: number;
  points: number;
}

type Geometry = 'bbox' | 'segments' | 'keypoints' | 'obb' | 'mask';
const GEOMETRIES: Geometry[] = ['bbox', 'segments', 'keypoints', 'obb', 'mask'];
const ALLOWED: Record<Task, Geometry[]> = {
  detect: ['bbox'],
  segment: ['segments', 'bbox'],
  semantic: ['segments', 'mask'],
  depth: [],
  classify: [],
  pose: ['bbox', 'keypoints'],
  obb: ['obb'],
};
const REQUIRED: Record<Task, Geometry[]> = {
  detect: ['bbox'],
  segment: ['segments'],
  semantic: [],
  depth: [],
  classify: [],
  pose: ['bbox', 'keypoints'],
  obb: ['obb'],
};

// `|| 0` turns -0 into 0, so a saved label never serializes as -0.
const round = (value: number) => Math.round(value * 1e5) / 1e5 || 0;

/**
 * Checks the labels of one image against the dataset task and class count (400 naming the index and rule on
 * the first problem) and returns them normalized, with the box and point count the statistics need.
 */
export function validateLabels(
  task: Task,
  classCount: number,
  labels: Label[],
  options: { kptShape?: [number, number] | null } = {},
): { labels: Label[]; shapes: Array<LabelShape | null> } {
  if (labels.length > MAX_LABELS_PER_IMAGE)
    throw Invalid(`labels: at most ${MAX_LABELS_PER_IMAGE} annotations per image`);
  if (task === 'depth' && labels.length > 0) throw Invalid('labels: depth datasets have no classes or labels');
  if (task === 'classify' && labels.length > 1) throw Invalid('labels: a classify image has at most one class');
  const dims = task === 'pose' ? keypointDims(labels, options.kptShape ?? null) : 0;

  const shapes: Array<LabelShape | null> = [];
  const normalized = labels.map((label, i) => {
    const at = `labels[${i}]`;
    if (label.classId >= classCount) {
      throw Invalid(
        `${at}.classId: ${label.classId} is out of range; the dataset has ${classCount} class${classCount === 1 ? '' : 'es'}`,
      );
    }
    for (const field of GEOMETRIES) {
      if (label[field] !== undefined && !ALLOWED[task].includes(field))
        throw Invalid(`${at}.${field}: not used by ${task} datasets`);
    }
    for (const field of REQUIRED[task]) {
      if (label[field] === undefined) throw Invalid(`${at}.${field}: required for ${task} datasets`);
    }
    // A semantic label is one region: a polygon or a mask, so its shape is never ambiguous.
    if (task === 'semantic' && (label.segments === undefined) === (label.mask === undefined)) {
      throw Invalid(`${at}: a semantic label needs either segments or mask`);
    }

    const clean: Label = { classId: label.classId };
    if (label.bbox) clean.bbox = bbox(`${at}.bbox`, label.bbox);
    if (label.segments) clean.segments = polygon(`${at}.segments`, label.segments);
    if (label.keypoints) clean.keypoints = coordinates(`${at}.keypoints`, label.keypoints, dims === 3);
    if (label.obb) {
      if (label.obb.length !== 8)
        throw Invalid(`${at}.obb: must be 8 numbers, the corners [x1, y1, x2, y2, x3, y3, x4, y4]`);
      clean.obb = coordinates(`${at}.obb`, label.obb);
    }
    if (label.mask) clean.mask = mask(`${at}.mask`, label.mask);
    shapes.push(shapeOf(clean, dims));
    return clean;
  });
  return { labels: normalized, shapes };
}

/** Rounded coordinates, each within 0-1; with `triples`, every third value is a visibility and left unchecked here. */
function coordinates(path: string, values: number[], triples = false): number[] {
  return values.map((value, j) => {
    if (!(triples && j % 3 === 2) && (value < 0 || value > 1))
      throw Invalid(`${path}[${j}]: ${value} is outside 0-1; coordinates are normalized`);
    return round(value);
  });
}

function bbox(path: string, values: number[]): number[] {
  if (values.length !== 4) throw Invalid(`${path}: must be 4 numbers [x_center, y_center, width, height]`);
  const box = coordinates(path, values);
  // Checked after rounding: a width that rounds to 0 would be saved as 0.
  if (box[2] <= 0 || box[3] <= 0) throw Invalid(`${path}: width and height must be greater than 0`);
  return box;
}

function polygon(path: string, values: number[]): number[] {
  if (values.length % 2 !== 0) throw Invalid(`${path}: must be x, y pairs (an even count of numbers)`);
  if (values.length < 6) throw Invalid(`${path}: a polygon needs at least 3 points (6 numbers)`);
  return coordinates(path, values);
}

function mask(path: string, value: NonNullable<Label['mask']>): NonNullable<Label['mask']> {
  const [height, width] = value.size;
  const pixels = value.counts.reduce((sum, count) => sum + count, 0);
  if (pixels !== height * width)
    throw Invalid(`${path}.counts: add up to ${pixels}, but size [${height}, ${width}] has ${height * width} pixels`);
  return value;
}

const validVisibility = (values: number[]) =>
  values.every((value, j) => j % 3 !== 2 || value === 0 || value === 1 || value === 2);

/**
 * 2 (x, y pairs) or 3 (x, y, v triples) for every label of the image: from the dataset's kpt_shape when set,
 * else inferred from the image's labels together, so one image never mixes layouts.
 */
function keypointDims(labels: Label[], kptShape: [number, number] | null): number {
  const entries = labels.flatMap((label, i) => (label.keypoints ? [{ i, values: label.keypoints }] : []));
  const invisible = () => entries.find(({ values }) => !validVisibility(values));
  if (kptShape) {
    const [count, dims] = kptShape;
    const wrong = entries.find(({ values }) => values.length !== count * dims);
    if (wrong)
      throw Invalid(`labels[${wrong.i}].keypoints: must be ${count * dims} values (kpt_shape [${count}, ${dims}])`);
    const bad = dims === 3 ? invisible() : undefined;
    if (bad) throw Invalid(`labels[${bad.i}].keypoints: visibility (every third value) must be 0, 1 or 2`);
    return dims;
  }
  const first = entries[0];
  if (!first) return 0;
  const length = first.values.length;
  const other = entries.find(({ values }) => values.length !== length);
  if (other) {
    throw Invalid(
      `labels[${other.i}].keypoints: every label of an image must have the same keypoint layout (${length} values, like labels[${first.i}])`,
    );
  }
  if (length === 0) throw Invalid(`labels[${first.i}].keypoints: must list at least one keypoint`);
  const bad = length % 3 === 0 ? invisible() : undefined;
  if (length % 3 === 0 && !bad) return 3;
  if (length % 2 === 0) return 2;
  throw Invalid(
    `labels[${(bad ?? first).i}].keypoints: ${length} values are neither x, y pairs nor x, y, v triples with v 0, 1 or 2`,
  );
}

/** The box around x, y pairs (a polygon or obb corners), already checked to lie within 0-1. */
function extents(values: number[], points: number): LabelShape {
  let [minX, minY, maxX, maxY] = [1, 1, 0, 0];
  for (let j = 0; j < values.length; j += 2) {
    minX = Math.min(minX, values[j]);
    maxX = Math.max(maxX, values[j]);
    minY = Math.min(minY, values[j + 1]);
    maxY = Math.max(maxY, values[j + 1]);
  }
  return {
    cx: round((minX + maxX) / 2),
    cy: round((minY + maxY) / 2),
    w: round(maxX - minX),
    h: round(maxY - minY),
    points,
  };
}

function shapeOf(label: Label, dims: number): LabelShape | null {
  const box = (values: number[], points: number) => ({
    cx: values[0],
    cy: values[1],
    w: values[2],
    h: values[3],
    points,
  });
  if (label.keypoints && label.bbox) return box(label.bbox, label.keypoints.length / dims);
  if (label.segments) return extents(label.segments, label.segments.length / 2);
  if (label.obb) return extents(label.obb, 4);
  if (label.bbox) return box(label.bbox, 2);
  return null;
}
