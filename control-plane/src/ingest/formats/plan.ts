// The ingest plan: what an archive or NDJSON file holds, in the source's own terms (source class indexes and
// names), before the ingest job maps classes, decodes images and stores them. Plus the small rules that
// every format reader shares: image extensions, split folder names, class indexes and class name lists, and
// the bounds on what a file may make the process hold.
import { posix } from 'node:path';
import type { Split } from '../../datasets/dataset.entity.ts';
import { MAX_CLASS_NAME, MAX_CLASS_NAMES, MAX_KEYPOINTS } from '../../datasets/dataset.schemas.ts';
import { TASKS, type Label, type Task } from '../../images/labels.ts';
import type { Skips } from './skips.ts';

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

/** An archive's files by path: whole (label files, up to MiBs), or as a stream of chunks (COCO JSON, up to 512 MiB). */
export interface ReadableFiles {
  read: ReadFile;
  stream(path: string): Promise<AsyncIterable<Uint8Array>>;
}

/** An archive's files, with their sizes to check before reading. */
export interface SizedReader extends ReadableFiles {
  sizeOf(path: string): number;
}

export interface IngestPlan {
  format: 'yolo' | 'coco' | 'ndjson' | 'classify-folders' | 'raw';
  /** What the source says or implies (detect/segment/pose/obb/classify); null for raw. */
  task: Task | null;
  /** Source class names, index = source classId. */
  classNames: string[];
  kptShape: [number, number] | null;
  items: PlanItem[];
  /** Files that are neither images nor understood label/metadata files, label files without an image, unknown label lines. */
  skipped: Skips;
}

export const IMAGE_EXTENSIONS = ['jpg', 'jpeg', 'png', 'webp', 'bmp', 'tif', 'tiff', 'gif', 'avif', 'heic'];

/** A label problem; the readers turn it into the image's labelError, prefixed with where it was found. */
export class LabelError extends Error {}

/** A problem with the dataset as a whole (its class names, its size): the ingest fails with this message. */
export class DatasetFileError extends Error {}

/**
 * Why text from a file cannot be stored (PostgreSQL refuses NUL in text and jsonb, and JSON escapes of
 * unpaired UTF-16 surrogates in jsonb); null when it can.
 */
export function textProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'contains a NUL character';
  return text.isWellFormed() ? null : 'contains broken Unicode (an unpaired surrogate)';
}

/** Deeper JSON is refused before anything recurses into it (JSON.parse takes any depth, JSON.stringify does not). */
export const MAX_JSON_DEPTH = 100;

/**
 * Why a JSON value from a file cannot be stored: text (keys included) PostgreSQL refuses, or nesting deeper
 * than MAX_JSON_DEPTH; as `where problem`, null when it can.
 */
export function jsonTextProblem(value: unknown, where = '', depth = 0): string | null {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    return problem && `${where || 'the value'} ${problem}`;
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth === MAX_JSON_DEPTH) return `${where} is nested more than ${MAX_JSON_DEPTH} levels deep`;
  const list = Array.isArray(value);
  for (const [key, inner] of Object.entries(value)) {
    const keyProblem = list ? null : textProblem(key);
    if (keyProblem) return `the key ${where ? `${where}.` : ''}${excerpt(key)} ${keyProblem}`;
    const found = jsonTextProblem(inner, list ? `${where}[${key}]` : `${where}${where ? '.' : ''}${key}`, depth + 1);
    if (found) return found;
  }
  return null;
}

/** A file's value quoted for a message: JSON, cut to a few dozen characters (a label token can be megabytes). */
export function excerpt(value: unknown, max = 40): string {
  // Never stringified whole: it may be nested too deep for JSON.stringify, or be megabytes.
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  // toWellFormed: cutting may split a surrogate pair.
  return text.length > max ? `${text.slice(0, max).toWellFormed()}…` : text;
}

/** Class names from a file, bounded like the API bounds them; a DatasetFileError names the first bad one. */
export function checkClassNames(names: string[], where: string): string[] {
  if (names.length > MAX_CLASS_NAMES)
    throw new DatasetFileError(`${where}: ${names.length} classes; a dataset has at most ${MAX_CLASS_NAMES}`);
  for (const [index, name] of names.entries()) {
    const problem =
      textProblem(name) ?? (name.length > MAX_CLASS_NAME ? `is longer than ${MAX_CLASS_NAME} characters` : null);
    if (problem) throw new DatasetFileError(`${where}: the name of class ${index} ${problem}`);
  }
  return names;
}

/**
 * What a plan may hold in memory, roughly in bytes: labels and metadata stay there until the images are
 * staged. COCO 2017 train (860,000 polygon annotations, some 60 million numbers) needs about half of it.
 */
export const MAX_PLAN_BYTES = 2 ** 30;

/** Counts what a plan holds; past MAX_PLAN_BYTES the ingest fails with a message, not with the process. */
export class PlanBudget {
  private left = MAX_PLAN_BYTES;

  spend(bytes: number): void {
    this.left -= bytes;
    if (this.left < 0) {
      throw new DatasetFileError(
        `The labels and metadata of this file need more than ${MAX_PLAN_BYTES / 2 ** 30} GiB of memory to ingest at once; ingest the dataset in parts`,
      );
    }
  }

  /** A label's numbers as doubles, plus the objects around them. */
  spendLabels(labels: Label[]): void {
    let values = 0;
    for (const label of labels)
      values +=
        8 +
        (label.bbox?.length ?? 0) +
        (label.segments?.length ?? 0) +
        (label.keypoints?.length ?? 0) +
        (label.obb?.length ?? 0);
    this.spend(8 * values);
  }
}

export const extensionOf = (path: string) => posix.extname(path).slice(1).toLowerCase();
export const isImagePath = (path: string) => IMAGE_EXTENSIONS.includes(extensionOf(path));

const SPLIT_NAMES: Record<string, Split> = {
  train: 'train',
  val: 'val',
  valid: 'val',
  validation: 'val',
  test: 'test',
};

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

export const taskOrNull = (value: unknown): Task | null =>
  (TASKS as readonly unknown[]).includes(value) ? (value as Task) : null;

/**
 * A source class index: a non-negative integer, below classCount when the source names its classes, and
 * below the class limit when it does not (the classes are then named by index, up to the highest one used).
 */
export function sourceClassId(value: unknown, classCount: number | null): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new LabelError(`class index must be a non-negative integer, got ${excerpt(value)}`);
  }
  if (classCount !== null && value >= classCount) {
    throw new LabelError(
      `class ${value} is out of range; the source names ${classCount} class${classCount === 1 ? '' : 'es'}`,
    );
  }
  if (value >= MAX_CLASS_NAMES)
    throw new LabelError(`class ${value} is out of range; a dataset has at most ${MAX_CLASS_NAMES} classes`);
  return value;
}

/**
 * Class names given as a list or as an index map (`{0: person, 1: car}`, YOLO and NDJSON both use it); indexes
 * the map skips are named by their number. Null when the value is neither; a DatasetFileError when it names
 * more classes than a dataset may have, or a name that cannot be stored.
 */
export function namesFromListOrMap(value: unknown, where: string): string[] | null {
  if (Array.isArray(value)) return checkClassNames(value.map(String), where);
  if (value === null || typeof value !== 'object') return null;
  const entries = Object.entries(value).map(([key, name]) => [Number(key), String(name)] as const);
  if (entries.some(([index]) => !Number.isInteger(index) || index < 0)) return null;
  const highest = entries.reduce((max, [index]) => Math.max(max, index), -1);
  if (highest >= MAX_CLASS_NAMES)
    throw new DatasetFileError(
      `${where}: class index ${highest} is out of range; a dataset has at most ${MAX_CLASS_NAMES} classes`,
    );
  const names = Array.from({ length: highest + 1 }, (_, index) => String(index));
  for (const [index, name] of entries) names[index] = name;
  return checkClassNames(names, where);
}

/**
 * `[keypoints, dims]` with 1 to 1,000 keypoints (as a dataset may have) and dims 2 or 3, as in a YOLO data.yaml
 * or NDJSON header; null when absent or malformed.
 */
export function kptShapeOrNull(value: unknown): [number, number] | null {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const pair: unknown[] = value;
  const [count, dims] = pair;
  return typeof count === 'number' &&
    Number.isInteger(count) &&
    count > 0 &&
    count <= MAX_KEYPOINTS &&
    (dims === 2 || dims === 3)
    ? [count, dims]
    : null;
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
export function checkRow(
  kind: RowKind,
  row: number[],
  kptShape: [number, number] | null,
  classCount: number | null,
): void {
  sourceClassId(row[0], classCount);
  const { length } = row;
  const rules: Record<RowKind, [boolean, string]> = {
    box: [length === 5, '5 numbers [class, xc, yc, w, h]'],
    polygon: [length >= 7 && length % 2 === 1, 'a class and the x, y pairs of at least 3 points'],
    pose: kptShape
      ? [
          length === 5 + kptShape[0] * kptShape[1],
          `${5 + kptShape[0] * kptShape[1]} numbers: class, box and the keypoints of kpt_shape [${kptShape.join(', ')}]`,
        ]
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
