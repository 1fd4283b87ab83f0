// YOLO archives: a data.yaml (names, kpt_shape, task, split folders) and one label .txt per image, in the
// ultralytics layouts `images/<split>/x.jpg` ↔ `labels/<split>/x.txt`, `<split>/images/x.jpg` ↔
// `<split>/labels/x.txt`, or flat `x.jpg` + `x.txt`.
import { posix } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Split } from '../../datasets/dataset.entity.ts';
import { MAX_CLASS_NAMES } from '../../datasets/dataset.schemas.ts';
import { MAX_LABELS_PER_IMAGE, type Task } from '../../images/labels.ts';
import {
  checkClassNames,
  checkRow,
  DatasetFileError,
  excerpt,
  indexClassNames,
  kptShapeOrNull,
  labelFromRow,
  LabelError,
  namesFromListOrMap,
  PlanBudget,
  splitFromPath,
  taskOrNull,
  type IngestPlan,
  type PlanItem,
  type RowKind,
  type SizedReader,
} from './plan.ts';
import { Skips } from './skips.ts';

const DATASET_YAML_NAMES = ['data.yaml', 'data.yml', 'dataset.yaml', 'dataset.yml'];
const YAML_SPLITS: Split[] = ['train', 'val', 'test'];
/** Larger dataset YAMLs and classes.txt files are not read: 25,000 class names fit many times over. */
export const MAX_YAML_BYTES = 2 ** 20;
/** Larger label files are a label error of their image: 10,000 polygons of 100 points fit. */
export const MAX_LABEL_FILE_BYTES = 16 * 2 ** 20;
/** Aliases a YAML may use (`*a`); a few nested ones already expand to billions of nodes. */
const MAX_YAML_ALIASES = 100;
/** Folders read per split entry list: each is matched against every image. */
const MAX_SPLIT_FOLDERS = 50;

export interface DatasetYaml {
  path: string;
  names: string[] | null;
  task: Task | null;
  kptShape: [number, number] | null;
  /** Per split, the archive folders its entry may mean, in preference order (resolved against the images). */
  splitFolders: Array<{ split: Split; candidates: string[] }>;
}

const depth = (path: string) => path.split('/').length;
const byDepth = (a: string, b: string) => depth(a) - depth(b) || a.localeCompare(b);

const isDatasetYaml = (path: string) => DATASET_YAML_NAMES.includes(posix.basename(path).toLowerCase());

/** The paths of an archive that may be its dataset YAML, the shallowest first. */
export const datasetYamlPaths = (paths: string[]) => paths.filter(isDatasetYaml).sort(byDepth);

/**
 * The shallowest usable data.yaml / dataset.yaml; the others, and unusable ones, are reported as skipped.
 * Class names no dataset could have fail the ingest (a DatasetFileError).
 */
export async function readDatasetYaml(
  files: SizedReader,
  paths: string[],
  skipped: Skips,
): Promise<DatasetYaml | null> {
  let yaml: DatasetYaml | null = null;
  for (const path of datasetYamlPaths(paths)) {
    if (yaml) {
      skipped.add(path, 'another dataset YAML is used');
      continue;
    }
    if (files.sizeOf(path) > MAX_YAML_BYTES) {
      skipped.add(path, `not a usable dataset YAML: larger than ${MAX_YAML_BYTES} bytes`);
      continue;
    }
    try {
      const text = (await files.read(path)).toString('utf8');
      yaml = datasetYaml(path, parseYaml(text, { maxAliasCount: MAX_YAML_ALIASES }));
    } catch (error) {
      if (error instanceof DatasetFileError) throw error;
      // The yaml parser appends a source excerpt on further lines; the first says what is wrong.
      skipped.add(path, `not a usable dataset YAML: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  return yaml;
}

function datasetYaml(path: string, doc: unknown): DatasetYaml {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a mapping');
  const fields = doc as Record<string, unknown>;
  const { nc } = fields;
  if (typeof nc === 'number' && nc > MAX_CLASS_NAMES)
    throw new DatasetFileError(`${path}: nc is ${nc}; a dataset has at most ${MAX_CLASS_NAMES} classes`);
  // Without names, nc still gives the class count; the classes are then named by their index.
  const ncNames =
    typeof nc === 'number' && Number.isInteger(nc) && nc > 0
      ? Array.from({ length: nc }, (_, index) => String(index))
      : null;
  const names = fields.names === undefined ? ncNames : namesFromListOrMap(fields.names, `${path}: names`);
  if (fields.names !== undefined && !names) throw new Error('names must be a list or a {index: name} map');
  const kptShape = kptShapeOrNull(fields.kpt_shape);
  if (fields.kpt_shape !== undefined && !kptShape) throw new Error('kpt_shape must be [keypoints (1-1000), 2 or 3]');
  const task = taskOrNull(fields.task);
  if (fields.task !== undefined && !task) throw new Error(`unknown task ${JSON.stringify(fields.task)}`);

  // Inside an archive `path` usually points at the author's machine, and Roboflow writes `train: ../train/images`
  // next to the yaml; so each entry is tried below `path`, beside the yaml, and with its leading ../ removed.
  const dir = posix.dirname(path);
  const base = typeof fields.path === 'string' && !fields.path.startsWith('/') ? fields.path : '';
  const splitFolders = YAML_SPLITS.flatMap((split) => {
    const value = fields[split];
    const entries = (Array.isArray(value) ? value : [value])
      .filter((entry): entry is string => typeof entry === 'string')
      .slice(0, MAX_SPLIT_FOLDERS);
    return entries.map((entry) => ({
      split,
      candidates: [
        ...new Set([
          posix.join(dir, base, entry),
          posix.join(dir, entry),
          posix.join(dir, entry.replace(/^(\.\.\/)+/, '')),
        ]),
      ]
        .map((folder) => (folder === '.' ? '' : folder.replace(/\/$/, '')))
        .filter((folder) => !folder.startsWith('..')),
    }));
  });
  return { path, names, task, kptShape, splitFolders };
}

const isUnder = (path: string, folder: string) => folder === '' || path.startsWith(`${folder}/`);

/** Each yaml split entry as the first of its candidate folders that holds an image. */
function resolveSplitFolders(yaml: DatasetYaml | null, images: string[]): Array<{ split: Split; folder: string }> {
  return (yaml?.splitFolders ?? []).flatMap(({ split, candidates }) => {
    const folder = candidates.find((candidate) => images.some((image) => isUnder(image, candidate)));
    return folder === undefined ? [] : [{ split, folder }];
  });
}

/**
 * The label file of an image: ultralytics swaps the last `images` folder for `labels` and the extension for
 * .txt; a flat layout keeps `x.txt` beside `x.jpg`.
 */
function labelPathOf(image: string, texts: Set<string>): string | undefined {
  const stem = image.slice(0, image.length - posix.extname(image).length);
  const parts = stem.split('/');
  const at = parts.lastIndexOf('images', parts.length - 2);
  const swapped = at >= 0 ? `${[...parts.slice(0, at), 'labels', ...parts.slice(at + 1)].join('/')}.txt` : undefined;
  return [swapped, `${stem}.txt`].find((candidate) => candidate !== undefined && texts.has(candidate));
}

/** A YOLO archive shows itself by a .txt under a `labels/` folder or beside an image of the same name. */
export function hasYoloLabels(images: string[], texts: string[]): boolean {
  const textSet = new Set(texts);
  return (
    texts.some((text) => text.split('/').slice(0, -1).includes('labels')) ||
    images.some((image) => labelPathOf(image, textSet))
  );
}

type LabelFile = { rows: number[][] } | { error: string };

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;

/** A file's rows `[class, ...numbers]`, or its first malformed line: one bad line drops the whole file's labels. */
function parseLabelFile(
  text: string,
  path: string,
  classCount: number | null,
  kptShape: [number, number] | null,
): LabelFile {
  const rows: number[][] = [];
  for (const [index, line] of text.split(/\r?\n/).entries()) {
    if (line.trim() === '') continue;
    if (rows.length === MAX_LABELS_PER_IMAGE)
      return {
        error: `${path}: more than ${MAX_LABELS_PER_IMAGE} labels; an image has at most ${MAX_LABELS_PER_IMAGE}`,
      };
    try {
      rows.push(parseLine(line, classCount, kptShape));
    } catch (error) {
      if (!(error instanceof LabelError)) throw error;
      return { error: `${path} line ${index + 1}: ${error.message}` };
    }
  }
  return { rows };
}

function parseLine(line: string, classCount: number | null, kptShape: [number, number] | null): number[] {
  // Number() alone would also take "0x1f", "Infinity" and "" as numbers.
  const row = line
    .trim()
    .split(/\s+/)
    .map((token) => {
      if (!NUMBER.test(token)) throw new LabelError(`${excerpt(token)} is not a number`);
      return Number(token);
    });
  // Nine numbers may still turn out to be obb corners: planYolo decides once it has seen every line.
  checkRow(kptShape ? 'pose' : row.length < 7 ? 'box' : 'polygon', row, kptShape, classCount);
  return row;
}

/** Runs `work` over the items a few at a time: archives can hold hundreds of thousands of small label files. */
async function forEachConcurrently<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Class names from a darknet-style classes.txt (one per line), which flat layouts often carry instead of a yaml. */
async function readClassesTxt(files: SizedReader, texts: string[]): Promise<{ path: string; names: string[] } | null> {
  const [path] = texts.filter((text) => posix.basename(text) === 'classes.txt').sort(byDepth);
  if (!path) return null;
  if (files.sizeOf(path) > MAX_YAML_BYTES) throw new DatasetFileError(`${path}: larger than ${MAX_YAML_BYTES} bytes`);
  const names = (await files.read(path))
    .toString('utf8')
    .split(/\r?\n/)
    .map((name) => name.trim());
  while (names.at(-1) === '') names.pop();
  return { path, names: checkClassNames(names, path) };
}

export async function planYolo(
  reader: SizedReader,
  images: string[],
  texts: string[],
  yaml: DatasetYaml | null,
): Promise<IngestPlan> {
  const textSet = new Set(texts);
  const labelPaths = new Map(images.map((image) => [image, labelPathOf(image, textSet)]));
  const classesTxt = yaml?.names ? null : await readClassesTxt(reader, texts);
  const names = yaml?.names ?? classesTxt?.names ?? null;
  const kptShape = yaml?.kptShape ?? null;

  const files = new Map<string, LabelFile>();
  const budget = new PlanBudget();
  const used = [...new Set(labelPaths.values())].filter((path) => path !== undefined);
  await forEachConcurrently(used, 16, async (path) => {
    if (reader.sizeOf(path) > MAX_LABEL_FILE_BYTES) {
      files.set(path, { error: `${path}: larger than ${MAX_LABEL_FILE_BYTES} bytes` });
      return;
    }
    const file = parseLabelFile((await reader.read(path)).toString('utf8'), path, names?.length ?? null, kptShape);
    // Rows are numbers, as labels are: counted like them.
    if ('rows' in file) budget.spend(file.rows.reduce((bytes, row) => bytes + 8 * (8 + row.length), 0));
    files.set(path, file);
  });

  const rows = [...files.values()].flatMap((file) => ('rows' in file ? file.rows : []));
  // Nine numbers are a 4-point polygon or obb corners; obb only when the yaml says so or no line has another length.
  const obb = !kptShape && rows.length > 0 && (yaml?.task === 'obb' || rows.every((row) => row.length === 9));
  const kindOf = (row: number[]): RowKind =>
    kptShape ? 'pose' : row.length === 5 ? 'box' : obb && row.length === 9 ? 'obb' : 'polygon';
  const inferred: Task | null = kptShape
    ? 'pose'
    : rows.some((row) => kindOf(row) === 'polygon')
      ? 'segment'
      : obb
        ? 'obb'
        : rows.length > 0
          ? 'detect'
          : null;

  const splitFolders = resolveSplitFolders(yaml, images);
  const items = images.map((path): PlanItem => {
    const folder = splitFolders
      .filter(({ folder }) => isUnder(path, folder))
      .sort((a, b) => b.folder.length - a.folder.length)[0];
    const split = folder?.split ?? splitFromPath(path);
    const labelPath = labelPaths.get(path);
    const file = labelPath === undefined ? { rows: [] } : files.get(labelPath)!;
    const item: PlanItem = {
      path,
      labels: 'rows' in file ? file.rows.map((row) => labelFromRow(kindOf(row), row)) : [],
    };
    if (split) item.split = split;
    if ('error' in file) item.labelError = file.error;
    return item;
  });

  const usedSet = new Set<string>(used);
  const skipped = new Skips();
  for (const text of texts)
    if (!usedSet.has(text) && text !== classesTxt?.path) skipped.add(text, 'a label file without a matching image');
  return {
    format: 'yolo',
    task: yaml?.task ?? inferred,
    classNames: names ?? indexClassNames(items),
    kptShape,
    items,
    skipped,
  };
}
