// The ingest plan: what an archive or NDJSON file holds, in the source's own terms (source class indexes and
// names), before the ingest job maps classes, decodes images and stores them. Plus the small rules that
// every format reader shares: image extensions, split folder names, class indexes and class name lists.
import { posix } from 'node:path';
import type { Split } from '../../datasets/dataset.entity.ts';
import { TASKS, type Label, type Task } from '../../images/labels.ts';

export interface PlanItem {
  /** Normalized archive-relative path of the image (or the NDJSON `file` value). */
  path: string;
  /** For NDJSON: where to fetch the image (its `url`); archives: undefined (the file is read by its path). */
  url?: string;
  /** From split folders / NDJSON split; undefined when the layout has none. */
  split?: Split;
  /** classId = SOURCE class index (into plan.classNames). */
  labels: Label[];
  /** NDJSON record metadata. */
  metadata?: Record<string, unknown>;
  /** A label problem for this image, counted and reported; the image is still added (labels dropped). */
  labelError?: string;
}

/** Reads one of the archive's files by its normalized path (in place for a ZIP, from disk for a TAR). */
export type ReadFile = (path: string) => Promise<Buffer>;

export interface IngestPlan {
  format: 'yolo' | 'coco' | 'ndjson' | 'classify-folders' | 'raw';
  /** What the source says or implies (detect/segment/pose/obb/classify); null for raw. */
  task: Task | null;
  /** Source class names, index = source classId. */
  classNames: string[];
  kptShape: [number, number] | null;
  items: PlanItem[];
  /** Files that are neither images nor understood label/metadata files, label files without an image, unknown label lines. */
  skipped: Skipped[];
}

export interface Skipped {
  path: string;
  reason: string;
}

export const IMAGE_EXTENSIONS = ['jpg', 'jpeg', 'png', 'webp', 'bmp', 'tif', 'tiff', 'gif', 'avif', 'heic'];

/** A label problem; the readers turn it into the image's labelError, prefixed with where it was found. */
export class LabelError extends Error {}

export const extensionOf = (path: string) => posix.extname(path).slice(1).toLowerCase();
export const isImagePath = (path: string) => IMAGE_EXTENSIONS.includes(extensionOf(path));

const SPLIT_NAMES: Record<string, Split> = { train: 'train', val: 'val', valid: 'val', validation: 'val', test: 'test' };

/** The split a folder name stands for (case ignored): train, val, valid, validation (→ val) or test. */
export const splitFromName = (name: string): Split | undefined => SPLIT_NAMES[name.toLowerCase()];

/**
 * The split of a file from its folders: the shallowest folder named like a split, so `images/train/x.jpg`,
 * `train/images/x.jpg` and `coco8/val/x.jpg` all work, and a classify class folder called "test" below a split
 * folder (`train/test/x.jpg`) does not override it.
 */
export function splitFromPath(path: string): Split | undefined {
  for (const folder of path.split('/').slice(0, -1)) {
    const split = splitFromName(folder);
    if (split) return split;
  }
  return undefined;
}

export const taskOrNull = (value: unknown): Task | null => ((TASKS as readonly unknown[]).includes(value) ? (value as Task) : null);

/** A source class index: a non-negative integer, below classCount when the source names its classes. */
export function sourceClassId(value: unknown, classCount: number | null): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new LabelError(`class index must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
  if (classCount !== null && value >= classCount) {
    throw new LabelError(`class ${value} is out of range; the source names ${classCount} class${classCount === 1 ? '' : 'es'}`);
  }
  return value;
}

/**
 * Class names given as a list or as an index map (`{0: person, 1: car}`, YOLO and NDJSON both use it); indexes
 * the map skips are named by their number. Null when the value is neither.
 */
export function namesFromListOrMap(value: unknown): string[] | null {
  if (Array.isArray(value)) return value.map(String);
  if (value === null || typeof value !== 'object') return null;
  const entries = Object.entries(value).map(([key, name]) => [Number(key), String(name)] as const);
  if (entries.some(([index]) => !Number.isInteger(index) || index < 0)) return null;
  const names = Array.from({ length: entries.reduce((length, [index]) => Math.max(length, index + 1), 0) }, (_, index) => String(index));
  for (const [index, name] of entries) names[index] = name;
  return names;
}

/** `[keypoints, dims]` with dims 2 or 3, as in a YOLO data.yaml or NDJSON header; null when absent or malformed. */
export function kptShapeOrNull(value: unknown): [number, number] | null {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const [count, dims] = value;
  return Number.isInteger(count) && count > 0 && (dims === 2 || dims === 3) ? [count, dims] : null;
}

/** When the source names no classes: the indexes as names, "0" up to the highest class index its labels use. */
export function indexClassNames(items: PlanItem[]): string[] {
  // A loop, not Math.max(...all): a large dataset's label count would overflow the argument list.
  let length = 0;
  for (const item of items) for (const label of item.labels) length = Math.max(length, label.classId + 1);
  return Array.from({ length }, (_, index) => String(index));
}

/** How a row `[class, ...numbers]` carries its geometry; YOLO label lines and NDJSON annotations share the layouts. */
export type RowKind = 'box' | 'polygon' | 'pose' | 'obb';

/**
 * Checks a row's class index, and its length for its kind; the LabelError names what was expected. Pose rows
 * must match the kpt_shape when the source gives one.
 */
export function checkRow(kind: RowKind, row: number[], kptShape: [number, number] | null, classCount: number | null): void {
  sourceClassId(row[0], classCount);
  const { length } = row;
  const rules: Record<RowKind, [boolean, string]> = {
    box: [length === 5, '5 numbers [class, xc, yc, w, h]'],
    polygon: [length >= 7 && length % 2 === 1, 'a class and the x, y pairs of at least 3 points'],
    pose: kptShape
      ? [length === 5 + kptShape[0] * kptShape[1], `${5 + kptShape[0] * kptShape[1]} numbers: class, box and the keypoints of kpt_shape [${kptShape.join(', ')}]`]
      : [length > 5, 'a class, a box and keypoints'],
    obb: [length === 9, '9 numbers [class, x1, y1, x2, y2, x3, y3, x4, y4]'],
  };
  const [valid, expected] = rules[kind];
  if (!valid) throw new LabelError(`expected ${expected}, got ${length} numbers`);
}

/** The label of a checked row: box `xc yc w h`, pose box + keypoints, polygon points or obb corners. */
export function labelFromRow(kind: RowKind, [classId, ...values]: number[]): Label {
  switch (kind) {
    case 'box':
      return { classId, bbox: values };
    case 'pose':
      return { classId, bbox: values.slice(0, 4), keypoints: values.slice(4) };
    case 'polygon':
      return { classId, segments: values };
    case 'obb':
      return { classId, obb: values };
  }
}
