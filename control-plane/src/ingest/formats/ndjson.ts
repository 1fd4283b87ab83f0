// The ultralytics NDJSON dataset format: a dataset header line, then one image record per line. The platform's
// NDJSON export writes annotations with toNdjsonAnnotations and ingest reads them back with fromNdjsonAnnotations.
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { MAX_LABELS_PER_IMAGE, type Label, type Task } from '../../images/labels.ts';
import { MetadataObject } from '../../validation/metadata.ts';
import { MAX_ARCHIVE_PATH } from '../archive/safe-path.ts';
import {
  checkRow,
  excerpt,
  indexClassNames,
  jsonTextProblem,
  kptShapeOrNull,
  labelFromRow,
  LabelError,
  namesFromListOrMap,
  PlanBudget,
  sourceClassId,
  splitFromName,
  taskOrNull,
  textProblem,
  type IngestPlan,
  type PlanItem,
  type RowKind,
} from './plan.ts';
import { Skips } from './skips.ts';

/** A longer line is skipped unread: a record is its metadata (500,000 characters at most) and up to 10,000 labels. */
export const MAX_LINE_BYTES = 16 * 2 ** 20;

/** How each task's labels are written: the annotations key and one row per label. */
const WRITERS: Partial<Record<Task, { key: string; row: (label: Label) => unknown }>> = {
  detect: { key: 'boxes', row: (label) => [label.classId, ...(label.bbox ?? [])] },
  segment: { key: 'segments', row: (label) => [label.classId, ...(label.segments ?? [])] },
  pose: { key: 'pose', row: (label) => [label.classId, ...(label.bbox ?? []), ...(label.keypoints ?? [])] },
  obb: { key: 'obb', row: (label) => [label.classId, ...(label.obb ?? [])] },
  classify: { key: 'classification', row: (label) => label.classId },
};

/**
 * The NDJSON `annotations` of an image; undefined when it has no labels, or for semantic and depth datasets,
 * which the format cannot express.
 */
export function toNdjsonAnnotations(task: Task, labels: Label[]): Record<string, unknown[]> | undefined {
  const writer = WRITERS[task];
  return writer && labels.length > 0 ? { [writer.key]: labels.map(writer.row) } : undefined;
}

// A Map: a key from the file like "constructor" must not find a property of Object.prototype.
const ROW_KINDS = new Map<string, RowKind>([
  ['boxes', 'box'],
  ['segments', 'polygon'],
  ['pose', 'pose'],
  ['obb', 'obb'],
]);

/** `[xc, yc, w, h, angle]` (radians) as the 4 corners, in the order of ultralytics' xywhr2xyxyxyxy. */
function obbCorners([xc, yc, w, h, angle]: number[]): number[] {
  const [ax, ay] = [(w / 2) * Math.cos(angle), (w / 2) * Math.sin(angle)]; // half the width, along the box
  const [bx, by] = [(-h / 2) * Math.sin(angle), (h / 2) * Math.cos(angle)]; // half the height, across it
  return [
    xc + ax + bx,
    yc + ay + by,
    xc + ax - bx,
    yc + ay - by,
    xc - ax - bx,
    yc - ay - by,
    xc - ax + bx,
    yc - ay + by,
  ];
}

/** A row of numbers checked for its kind; obb rows in the angle form come back as corners. */
function readRow(kind: RowKind, row: unknown, kptShape: [number, number] | null, classCount: number | null): number[] {
  if (!Array.isArray(row) || !row.every((value) => typeof value === 'number'))
    throw new LabelError('must be a list of numbers');
  const values = kind === 'obb' && row.length === 6 ? [row[0], ...obbCorners(row.slice(1))] : row;
  checkRow(kind, values, kptShape, classCount);
  return values;
}

/** Prefixes a label problem with where it was found. */
function at<T>(where: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof LabelError) throw new LabelError(`${where}: ${error.message}`);
    throw error;
  }
}

/**
 * The labels of an NDJSON `annotations` object (source class indexes); a LabelError names the first problem.
 * Like the ultralytics client, only the first key is read. With kptShape, pose rows must match it.
 */
export function fromNdjsonAnnotations(
  annotations: unknown,
  options: { kptShape?: [number, number] | null; classCount?: number | null } = {},
): Label[] {
  if (annotations === undefined || annotations === null) return [];
  if (typeof annotations !== 'object' || Array.isArray(annotations))
    throw new LabelError('annotations must be an object');
  const [first] = Object.entries(annotations as Record<string, unknown>);
  if (!first) return [];
  const [key, rows] = first;
  const kind = ROW_KINDS.get(key);
  if (!kind && key !== 'classification')
    throw new LabelError(
      `annotations.${excerpt(key)}: unknown kind; expected boxes, segments, pose, obb or classification`,
    );
  if (!Array.isArray(rows)) throw new LabelError(`annotations.${key} must be a list`);
  if (rows.length > MAX_LABELS_PER_IMAGE)
    throw new LabelError(`annotations.${key}: ${rows.length} labels; an image has at most ${MAX_LABELS_PER_IMAGE}`);
  const classCount = options.classCount ?? null;
  if (!kind)
    return rows.map((value, index) => ({
      classId: at(`annotations.classification[${index}]`, () => sourceClassId(value, classCount)),
    }));
  return rows.map((row, index) =>
    labelFromRow(
      kind,
      at(`annotations.${key}[${index}]`, () => readRow(kind, row, options.kptShape ?? null, classCount)),
    ),
  );
}

/** The task a label's geometry implies, for files whose header names none. */
function taskOfLabel(label: Label): Task {
  if (label.keypoints) return 'pose';
  if (label.segments) return 'segment';
  if (label.obb) return 'obb';
  return label.bbox ? 'detect' : 'classify';
}

interface Header {
  task: Task | null;
  classNames: string[] | null;
  kptShape: [number, number] | null;
}

/**
 * The dataset record's task, class_names and kpt_shape; a field that is present but unusable is reported, and
 * class names that no dataset could have fail the ingest (a DatasetFileError).
 */
function readHeader(record: Record<string, unknown>, path: string, line: number, skipped: Skips): Header {
  const header: Header = {
    task: taskOrNull(record.task),
    classNames: namesFromListOrMap(record.class_names, `${path} line ${line}: class_names`),
    kptShape: kptShapeOrNull(record.kpt_shape),
  };
  const problems = [
    record.task !== undefined && !header.task && 'unknown task; ignored',
    record.class_names !== undefined &&
      !header.classNames &&
      'class_names must be a {"0": name} map or a list; ignored',
    record.kpt_shape !== undefined && !header.kptShape && 'kpt_shape must be [keypoints (1-1000), 2 or 3]; ignored',
  ];
  for (const problem of problems) if (problem) skipped.add(path, problem, `line ${line}`);
  return header;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Why a record's metadata cannot be stored; null when it can. */
function metadataProblem(metadata: unknown): string | null {
  // Depth first: the size check serializes it.
  const problem = jsonTextProblem(metadata);
  if (problem) return `"metadata": ${problem}`;
  const parsed = MetadataObject.safeParse(metadata);
  return parsed.success ? null : `"metadata" ${parsed.error.issues[0].message}`;
}

/** One image record as a plan item, or why the line is skipped (the same words for the same problem). */
function readImage(record: Record<string, unknown>, header: Header, line: number): PlanItem | string {
  if (record.type !== undefined && record.type !== 'image') return 'unknown record type';
  if (typeof record.file !== 'string' || record.file === '') return '"file" is required';
  if (record.file.length > MAX_ARCHIVE_PATH) return `"file" is longer than ${MAX_ARCHIVE_PATH} characters`;
  const fileProblem = textProblem(record.file);
  if (fileProblem) return `"file" ${fileProblem}`;
  const split = typeof record.split === 'string' ? splitFromName(record.split) : undefined;
  if (!split) return '"split" must be train, val or test';
  if (record.metadata !== undefined) {
    const problem = isObject(record.metadata) ? metadataProblem(record.metadata) : '"metadata" must be an object';
    if (problem) return problem;
  }

  const item: PlanItem = { path: record.file, split, labels: [] };
  if (typeof record.url === 'string') item.url = record.url;
  if (isObject(record.metadata)) item.metadata = record.metadata;
  try {
    item.labels = fromNdjsonAnnotations(record.annotations, {
      kptShape: header.kptShape,
      classCount: header.classNames?.length ?? null,
    });
  } catch (error) {
    if (!(error instanceof LabelError)) throw error;
    item.labelError = `line ${line}: ${error.message}`;
  }
  return item;
}

/**
 * The lines of a file (without the line break), read in chunks; a line longer than `maxBytes` comes as null
 * and its bytes are dropped as they arrive, so no line, however long, is held whole.
 */
async function* linesOf(file: string, maxBytes: number): AsyncGenerator<string | null> {
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  const append = (piece: Buffer) => {
    if (tooLong || piece.length === 0) return;
    size += piece.length;
    if (size > maxBytes) [tooLong, parts] = [true, []];
    else parts.push(piece);
  };
  const take = (): string | null => {
    const text = tooLong ? null : Buffer.concat(parts, size).toString('utf8').replace(/\r$/, '');
    [parts, size, tooLong] = [[], 0, false];
    return text;
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(0x0a); end >= 0; end = chunk.indexOf(0x0a, start)) {
      append(chunk.subarray(start, end));
      yield take();
      start = end + 1;
    }
    append(chunk.subarray(start));
  }
  if (size > 0) yield take();
}

/** Plans an NDJSON dataset file, read line by line so a large file is never held whole; `name` is what reports call it. */
export async function planNdjson(file: string, name = basename(file)): Promise<IngestPlan> {
  const header: Header = { task: null, classNames: null, kptShape: null };
  const items: PlanItem[] = [];
  const skipped = new Skips();
  const budget = new PlanBudget();
  const lineOf = new Map<string, number>();
  let line = 0;
  // The first non-empty line is the only place for the dataset record.
  let headerLine: number | undefined;
  for await (const text of linesOf(file, MAX_LINE_BYTES)) {
    line += 1;
    const at = `line ${line}`;
    if (text === null) {
      headerLine ??= line;
      skipped.add(name, `longer than ${MAX_LINE_BYTES} bytes`, at);
      continue;
    }
    if (text.trim() === '') continue;
    headerLine ??= line;
    let record: unknown;
    try {
      record = JSON.parse(line === 1 ? text.replace(/^\uFEFF/, '') : text);
    } catch {
      skipped.add(name, 'not valid JSON', at);
      continue;
    }
    if (!isObject(record)) {
      skipped.add(name, 'not a JSON object', at);
      continue;
    }
    if (record.type === 'dataset') {
      if (line === headerLine) Object.assign(header, readHeader(record, name, line, skipped));
      else skipped.add(name, 'a dataset record belongs on the first line', at);
      continue;
    }
    const item = readImage(record, header, line);
    if (typeof item === 'string') skipped.add(typeof record.file === 'string' ? record.file : name, item, at);
    else if (lineOf.has(item.path))
      skipped.add(item.path, 'the same file as an earlier line', `${at} (first on line ${lineOf.get(item.path)})`);
    else {
      budget.spendLabels(item.labels);
      if (item.metadata) budget.spend(2 * JSON.stringify(item.metadata).length);
      lineOf.set(item.path, line);
      items.push(item);
    }
  }

  const firstLabel = items.find((item) => item.labels.length > 0)?.labels[0];
  const task = header.task ?? (firstLabel ? taskOfLabel(firstLabel) : null);
  // Without a kpt_shape, keypoints are read as x, y, v triples (the ultralytics default).
  const keypoints = firstLabel?.keypoints?.length ?? 0;
  const kptShape =
    header.kptShape ?? (task === 'pose' && keypoints % 3 === 0 ? kptShapeOrNull([keypoints / 3, 3]) : null);
  return { format: 'ndjson', task, classNames: header.classNames ?? indexClassNames(items), kptShape, items, skipped };
}
