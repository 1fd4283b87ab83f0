// COCO archives: one or more JSON files with `images`, `annotations` and `categories`, pixel coordinates
// normalized here with the image sizes the JSON records. A file is streamed and read one record at a time
// (COCO 2017 train is 450 MB of JSON, a hostile file 100 million tiny records): what is kept is its categories
// and, for the images found in the archive, their record and annotations, each bounded.
import { posix } from 'node:path';
import { z } from 'zod';
import type { Split } from '../../datasets/dataset.entity.ts';
import { MAX_CLASS_NAMES } from '../../datasets/dataset.schemas.ts';
import { MAX_LABELS_PER_IMAGE, type Label, type Task } from '../../images/labels.ts';
import { forEachElement, JsonScanError, type Element } from './json-elements.ts';
import {
  DatasetFileError,
  LabelError,
  PlanBudget,
  checkClassNames,
  kptShapeOrNull,
  splitFromName,
  splitFromPath,
  textProblem,
  type IngestPlan,
  type PlanItem,
  type SizedReader,
} from './plan.ts';
import { Skips } from './skips.ts';

/** A larger image, annotation or category record is skipped unread (the largest in COCO 2017 are a few KB). */
export const MAX_RECORD_BYTES = 4 * 2 ** 20;
/**
 * More malformed image records than this in one file fail the ingest: each costs microseconds and garbage to
 * describe, and a file of a hundred million of them would take many minutes and hundreds of MB for nothing.
 */
export const MAX_MALFORMED_IMAGES = 100_000;

// supercategory is only compared with names (see classCategories): any value is taken, so an odd one never makes a file unusable.
const Category = z.object({
  id: z.number(),
  name: z.string(),
  supercategory: z.unknown().optional(),
  keypoints: z.array(z.string()).optional(),
});
type Category = z.output<typeof Category>;
const ImageRecord = z.object({
  id: z.union([z.number(), z.string()]),
  file_name: z.string().min(1),
  width: z.number().positive().optional(),
  height: z.number().positive().optional(),
});
const Annotation = z.object({
  image_id: z.union([z.number(), z.string()]),
  category_id: z.number(),
  bbox: z.array(z.number()).length(4).optional(),
  // RLE is kept as a marker only: its runs are never used, only reported.
  segmentation: z
    .union([
      z.array(z.array(z.number())),
      z.object({ counts: z.unknown(), size: z.unknown() }).transform(() => 'rle' as const),
    ])
    .optional(),
  keypoints: z
    .array(z.number())
    .refine((values) => values.length % 3 === 0, 'must be x, y, v triples')
    .optional(),
  iscrowd: z.union([z.number(), z.boolean()]).optional(),
});
type Annotation = z.output<typeof Annotation>;

/** The first problem zod found, as `where.field: problem`. */
const issue = (where: string, error: z.ZodError) => {
  const [first] = error.issues;
  return first.path.length > 0 ? `${where}.${first.path.join('.')}: ${first.message}` : `${where}: ${first.message}`;
};

/** An image claimed by a COCO file, with its annotations in that file (or the first one that is malformed). */
interface Entry {
  json: string;
  split: Split | undefined;
  width?: number;
  height?: number;
  annotations: Array<{ index: number; annotation: Annotation }>;
  error?: string;
}

/** What the COCO files of an archive say: their categories (first file by path wins an id) and images. */
export interface CocoSource {
  files: string[];
  categories: Map<number, Category>;
  /** By archive path; an image listed by several files takes the first file by path only, so two label sets never mix. */
  entries: Map<string, Entry>;
}

/** A split named by a word of a COCO file or folder name: `instances_val2017` → val. */
function splitFromWords(name: string): Split | undefined {
  return name
    .split(/[^a-zA-Z]+/)
    .map(splitFromName)
    .find((split) => split !== undefined);
}

/** `file_name` beside the JSON, in an `images/` folder beside it, or from the archive root; else a unique basename. */
function imageResolver(images: string[]): (fileName: string, jsonDir: string) => string | undefined {
  const exact = new Set(images);
  const byBasename = new Map<string, string[]>();
  for (const image of images) {
    const group = byBasename.get(posix.basename(image));
    if (group) group.push(image);
    else byBasename.set(posix.basename(image), [image]);
  }
  return (fileName, jsonDir) => {
    const name = fileName.replaceAll('\\', '/');
    const found = [posix.join(jsonDir, name), posix.join(jsonDir, 'images', name), posix.normalize(name)].find((path) =>
      exact.has(path),
    );
    const sameName = byBasename.get(posix.basename(name));
    return found ?? (sameName?.length === 1 ? sameName[0] : undefined);
  };
}

/** Memory an annotation holds, roughly in bytes: its numbers and the arrays around them. */
function annotationBytes({ bbox, segmentation, keypoints }: Annotation): number {
  const polygons = Array.isArray(segmentation) ? segmentation : [];
  return (
    8 *
    (16 +
      (bbox?.length ?? 0) +
      (keypoints?.length ?? 0) +
      polygons.reduce((sum, polygon) => sum + 4 + polygon.length, 0))
  );
}

const FIRST_PASS = new Set(['images', 'categories']);
const SECOND_PASS = new Set(['annotations']);
const NOT_COCO = 'not a COCO annotation file (needs images, annotations and categories arrays)';

/** One COCO file: categories and images on a first pass over its bytes, annotations on a second. */
class CocoFileReader {
  readonly skipped = new Skips();
  readonly categories: Category[] = [];
  readonly entries = new Map<string, Entry>();
  /** Set when the file cannot be used: why, for its skipped entry. */
  problem: string | null = null;
  private malformedImages = 0;
  private readonly byId = new Map<unknown, Entry>();
  private readonly path: string;
  private readonly source: CocoSource;
  private readonly resolve: ReturnType<typeof imageResolver>;
  private readonly budget: PlanBudget;
  private readonly dir: string;
  private readonly split: Split | undefined;

  constructor(path: string, source: CocoSource, resolve: ReturnType<typeof imageResolver>, budget: PlanBudget) {
    [this.path, this.source, this.resolve, this.budget] = [path, source, resolve, budget];
    this.dir = posix.dirname(path) === '.' ? '' : posix.dirname(path);
    this.split = splitFromWords(posix.basename(path, '.json')) ?? splitFromWords(posix.basename(this.dir));
  }

  /** Reads the file from `open`, twice: categories and images first, then the annotations of those images. */
  async read(open: () => Promise<AsyncIterable<Uint8Array>>): Promise<void> {
    try {
      const arrays = await forEachElement(await open(), FIRST_PASS, MAX_RECORD_BYTES, (element) =>
        element.key === 'images' ? this.image(element) : this.category(element),
      );
      if (!['images', 'annotations', 'categories'].every((key) => arrays.has(key))) this.problem = NOT_COCO;
      if (this.problem) return;
      await forEachElement(await open(), SECOND_PASS, MAX_RECORD_BYTES, (element) => this.annotation(element));
    } catch (error) {
      if (!(error instanceof JsonScanError)) throw error;
      this.problem = `not readable JSON: ${error.message}`;
    }
  }

  private imageRecord(element: Element): z.output<typeof ImageRecord> | null {
    if (element.bytes > MAX_RECORD_BYTES) {
      this.skipped.add(this.path, `larger than ${MAX_RECORD_BYTES} bytes`, () => `images[${element.index}]`);
      return null;
    }
    const parsed = ImageRecord.safeParse(element.parse());
    if (parsed.success) return parsed.data;
    // The reason names the field and `at` the record, so that records with the same problem group.
    const reason = issue('record', parsed.error);
    if (++this.malformedImages > MAX_MALFORMED_IMAGES) {
      throw new DatasetFileError(
        `${this.path}: more than ${MAX_MALFORMED_IMAGES} malformed image records (images[${element.index}] ${reason}); fix or remove the file`,
      );
    }
    this.skipped.add(this.path, reason, () => `images[${element.index}]`);
    return null;
  }

  private category(element: Element): void {
    if (this.problem) return;
    const parsed = element.bytes > MAX_RECORD_BYTES ? null : Category.safeParse(element.parse());
    if (!parsed?.success) {
      const where = `COCO categories.${element.index}`;
      this.problem = parsed ? issue(where, parsed.error) : `${where}: larger than ${MAX_RECORD_BYTES} bytes`;
      return;
    }
    if (this.categories.length === MAX_CLASS_NAMES)
      throw new DatasetFileError(
        `${this.path}: more than ${MAX_CLASS_NAMES} categories; a dataset has at most ${MAX_CLASS_NAMES} classes`,
      );
    const problem = textProblem(parsed.data.name);
    if (problem) throw new DatasetFileError(`${this.path}: categories[${element.index}].name ${problem}`);
    this.categories.push(parsed.data);
  }

  private image(element: Element): void {
    const record = this.imageRecord(element);
    if (!record) return;
    const at = () => `images[${element.index}]`;
    const problem = textProblem(record.file_name);
    if (problem) return this.skipped.add(this.path, `file_name ${problem}`, at);
    const path = this.resolve(record.file_name, this.dir);
    if (path === undefined)
      return this.skipped.add(
        this.path,
        'its file_name is not in the archive',
        () => `${at()} ${JSON.stringify(record.file_name)}`,
      );
    const claimedBy = (this.source.entries.get(path) ?? this.entries.get(path))?.json;
    if (claimedBy)
      return this.skipped.add(
        this.path,
        'its image is already annotated by an earlier record or file',
        () => `${at()} ${JSON.stringify(record.file_name)}, by ${claimedBy}`,
      );
    const entry: Entry = {
      json: this.path,
      split: this.split ?? splitFromPath(path),
      width: record.width,
      height: record.height,
      annotations: [],
    };
    this.entries.set(path, entry);
    this.byId.set(record.id, entry);
  }

  private annotation(element: Element): void {
    const at = () => `annotations[${element.index}]`;
    if (element.bytes > MAX_RECORD_BYTES)
      return this.skipped.add(this.path, `larger than ${MAX_RECORD_BYTES} bytes`, at);
    const raw = element.parse();
    const imageId = (raw as { image_id?: unknown } | null)?.image_id;
    const entry = this.byId.get(imageId);
    if (!entry)
      return this.skipped.add(this.path, 'its image_id is not an image of this file found in the archive', at);
    if (entry.error) return;
    const parsed = Annotation.safeParse(raw);
    if (!parsed.success) entry.error = issue(`${this.path} ${at()}`, parsed.error);
    else if (entry.annotations.length === MAX_LABELS_PER_IMAGE) {
      entry.error = `${this.path}: more than ${MAX_LABELS_PER_IMAGE} annotations for this image; an image has at most ${MAX_LABELS_PER_IMAGE}`;
      entry.annotations = [];
    }
    // Crowd regions are not instances (ultralytics' converter drops them too); their masks are RLE anyway.
    else if (!parsed.data.iscrowd) {
      this.budget.spend(annotationBytes(parsed.data));
      entry.annotations.push({ index: element.index, annotation: parsed.data });
    }
  }
}

/**
 * Reads the .json files that are COCO annotation files, in path order; the others are reported as skipped
 * with what they lack. Null when none is. Too many categories, or a category name that cannot be stored,
 * fail the ingest (a DatasetFileError).
 */
export async function readCoco(
  files: SizedReader,
  paths: string[],
  images: string[],
  skipped: Skips,
): Promise<CocoSource | null> {
  const source: CocoSource = { files: [], categories: new Map(), entries: new Map() };
  const resolve = imageResolver(images);
  const budget = new PlanBudget();
  for (const path of [...paths].sort()) {
    const file = new CocoFileReader(path, source, resolve, budget);
    await file.read(() => files.stream(path));
    if (file.problem) {
      skipped.add(path, file.problem);
      continue;
    }
    skipped.merge(file.skipped);
    source.files.push(path);
    for (const category of file.categories)
      if (!source.categories.has(category.id)) source.categories.set(category.id, category);
    if (source.categories.size > MAX_CLASS_NAMES)
      throw new DatasetFileError(
        `The COCO files name more than ${MAX_CLASS_NAMES} categories; a dataset has at most ${MAX_CLASS_NAMES} classes`,
      );
    for (const [image, entry] of file.entries) source.entries.set(image, entry);
  }
  return source.files.length > 0 ? source : null;
}

function taskOf(entries: Iterable<Entry>): Task | null {
  let task: Task | null = null;
  for (const entry of entries) {
    for (const { annotation } of entry.annotations) {
      if (annotation.keypoints?.length) return 'pose';
      if (Array.isArray(annotation.segmentation) && annotation.segmentation.length > 0) task = 'segment';
      task ??= 'detect';
    }
  }
  return task;
}

/** Pixel x, y (and for keypoints v, kept as is) values normalized by the image size. */
function normalize(values: number[], stride: 2 | 3, width: number, height: number): number[] {
  return values.map((value, index) =>
    index % stride === 0 ? value / width : index % stride === 1 ? value / height : value,
  );
}

/** The labels of one annotation for the task: a box, a box with keypoints, or one label per polygon. */
function labelsOf(
  annotation: Annotation,
  task: Task,
  classIds: Map<number, number>,
  width?: number,
  height?: number,
): Label[] {
  const classId = classIds.get(annotation.category_id);
  if (classId === undefined) throw new LabelError(`category_id ${annotation.category_id} is not in categories`);
  if (!width || !height) throw new LabelError('the image record has no width and height to normalize with');
  const { bbox, segmentation, keypoints } = annotation;
  if (task === 'segment' && segmentation !== undefined) {
    if (!Array.isArray(segmentation)) throw new LabelError('RLE segmentation is not supported, use polygons');
    if (segmentation.length > 0)
      return segmentation.map((polygon) => ({ classId, segments: normalize(polygon, 2, width, height) }));
  }
  if (!bbox) throw new LabelError('bbox is missing');
  const [x, y, w, h] = bbox;
  const label: Label = { classId, bbox: [(x + w / 2) / width, (y + h / 2) / height, w / width, h / height] };
  if (task === 'pose' && keypoints) label.keypoints = normalize(keypoints, 3, width, height);
  return [label];
}

/** An entry's labels, or none and the first problem: one bad annotation drops the image's labels. */
function entryLabels(entry: Entry, task: Task, classIds: Map<number, number>): Pick<PlanItem, 'labels' | 'labelError'> {
  if (entry.error) return { labels: [], labelError: entry.error };
  const labels: Label[] = [];
  for (const { index, annotation } of entry.annotations) {
    try {
      labels.push(...labelsOf(annotation, task, classIds, entry.width, entry.height));
    } catch (error) {
      if (!(error instanceof LabelError)) throw error;
      return { labels: [], labelError: `${entry.json} annotations[${index}]: ${error.message}` };
    }
  }
  return { labels };
}

/** The keypoint count of a pose source: the first category's keypoint names, else the first annotation's triples. */
function keypointCount(categories: Category[], entries: Iterable<Entry>): number {
  const named = categories.find((category) => category.keypoints?.length)?.keypoints?.length;
  if (named) return named;
  for (const entry of entries) {
    for (const { annotation } of entry.annotations)
      if (annotation.keypoints?.length) return annotation.keypoints.length / 3;
  }
  return 0;
}

/**
 * The categories that are classes: all but those that only group others. Roboflow's COCO names its project as
 * category 0, the supercategory of every real class, and no annotation uses it; it is no class.
 */
function classCategories(categories: Iterable<Category>, entries: Iterable<Entry>): Category[] {
  const all = [...categories];
  const used = new Set<number>();
  for (const entry of entries) for (const { annotation } of entry.annotations) used.add(annotation.category_id);
  // A category that is its own supercategory groups nothing.
  const groups = new Set(
    all.filter((category) => category.supercategory !== category.name).map((category) => category.supercategory),
  );
  return all.filter((category) => used.has(category.id) || !groups.has(category.name));
}

/** Every image of the archive: those a COCO file lists with its labels, the others unlabeled. */
export function planCoco(source: CocoSource, images: string[]): IngestPlan {
  // Category ids may be sparse and unordered: source class indexes follow the ids in ascending order.
  const sorted = classCategories(source.categories.values(), source.entries.values()).sort((a, b) => a.id - b.id);
  const classIds = new Map(sorted.map((category, index) => [category.id, index]));
  const classNames = checkClassNames(
    sorted.map((category) => category.name),
    'COCO categories',
  );
  const task = taskOf(source.entries.values());
  const kptShape = task === 'pose' ? kptShapeOrNull([keypointCount(sorted, source.entries.values()), 3]) : null;
  const items = images.map((path): PlanItem => {
    const entry = source.entries.get(path);
    const split = entry ? entry.split : splitFromPath(path);
    const { labels, labelError } =
      entry && task ? entryLabels(entry, task, classIds) : { labels: [], labelError: entry?.error };
    // The annotations are labels now: the plan holds one copy.
    if (entry) entry.annotations = [];
    const item: PlanItem = { path, labels };
    if (split) item.split = split;
    if (labelError) item.labelError = labelError;
    return item;
  });
  return { format: 'coco', task, classNames, kptShape, items, skipped: new Skips() };
}
