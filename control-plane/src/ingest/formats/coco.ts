// COCO archives: one or more JSON files with `images`, `annotations` and `categories`, pixel coordinates
// normalized here with the image sizes the JSON records.
import { posix } from 'node:path';
import { z } from 'zod';
import type { Split } from '../../datasets/dataset.entity.ts';
import type { Label, Task } from '../../images/labels.ts';
import { LabelError, splitFromName, splitFromPath, type IngestPlan, type PlanItem, type ReadFile, type Skipped } from './plan.ts';

const CocoShape = z.object({ images: z.array(z.unknown()), annotations: z.array(z.unknown()), categories: z.array(z.unknown()) });
const Category = z.object({ id: z.number(), name: z.string(), keypoints: z.array(z.string()).optional() });
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
  segmentation: z.union([z.array(z.array(z.number())), z.object({ counts: z.unknown(), size: z.unknown() })]).optional(),
  keypoints: z
    .array(z.number())
    .refine((values) => values.length % 3 === 0, 'must be x, y, v triples')
    .optional(),
  iscrowd: z.union([z.number(), z.boolean()]).optional(),
});
type Annotation = z.output<typeof Annotation>;

export interface CocoFile {
  path: string;
  images: unknown[];
  annotations: unknown[];
  categories: Array<z.output<typeof Category>>;
}

const issue = (error: z.ZodError) => {
  const [first] = error.issues;
  return first.path.length > 0 ? `${first.path.join('.')}: ${first.message}` : first.message;
};

/** The .json files that are COCO annotation files; the others are reported as skipped with what they lack. */
export async function readCocoFiles(read: ReadFile, paths: string[]): Promise<{ files: CocoFile[]; skipped: Skipped[] }> {
  const files: CocoFile[] = [];
  const skipped: Skipped[] = [];
  for (const path of paths) {
    let doc: unknown;
    try {
      doc = JSON.parse((await read(path)).toString('utf8'));
    } catch (error) {
      skipped.push({ path, reason: `not readable JSON: ${(error as Error).message}` });
      continue;
    }
    const shape = CocoShape.safeParse(doc);
    if (!shape.success) {
      skipped.push({ path, reason: 'not a COCO annotation file (needs images, annotations and categories arrays)' });
      continue;
    }
    const categories = z.array(Category).safeParse(shape.data.categories);
    if (!categories.success) skipped.push({ path, reason: `COCO categories.${issue(categories.error)}` });
    else files.push({ path, ...shape.data, categories: categories.data });
  }
  return { files, skipped };
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
    const found = [posix.join(jsonDir, name), posix.join(jsonDir, 'images', name), posix.normalize(name)].find((path) => exact.has(path));
    const sameName = byBasename.get(posix.basename(name));
    return found ?? (sameName?.length === 1 ? sameName[0] : undefined);
  };
}

/** An image claimed by a COCO file, with its annotations in that file (or the first one that is malformed). */
interface Entry {
  json: string;
  split: Split | undefined;
  width?: number;
  height?: number;
  annotations: Array<{ index: number; annotation: Annotation }>;
  error?: string;
}

/**
 * Collects each image's record and annotations. An image listed by several files (instances_ and
 * person_keypoints_ of the same set) takes the first file by path only, so two label sets never mix.
 */
function collect(files: CocoFile[], images: string[], skipped: Skipped[]): Map<string, Entry> {
  const resolve = imageResolver(images);
  const entries = new Map<string, Entry>();
  for (const file of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    const dir = posix.dirname(file.path) === '.' ? '' : posix.dirname(file.path);
    const split = splitFromWords(posix.basename(file.path, '.json')) ?? splitFromWords(posix.basename(dir));
    // null: the record was reported already, so its annotations are dropped quietly.
    const byId = new Map<unknown, Entry | null>();
    for (const [index, raw] of file.images.entries()) {
      const record = ImageRecord.safeParse(raw);
      if (!record.success) {
        skipped.push({ path: file.path, reason: `images[${index}].${issue(record.error)}` });
        continue;
      }
      const { id, file_name, width, height } = record.data;
      const path = resolve(file_name, dir);
      const claimedBy = path === undefined ? undefined : entries.get(path)?.json;
      if (path === undefined || claimedBy) {
        byId.set(id, null);
        const why = claimedBy ? `is already annotated by ${claimedBy}` : 'is not in the archive';
        skipped.push({ path: file.path, reason: `images[${index}]: "${file_name}" ${why}` });
        continue;
      }
      const entry: Entry = { json: file.path, split: split ?? splitFromPath(path), width, height, annotations: [] };
      entries.set(path, entry);
      byId.set(id, entry);
    }
    for (const [index, raw] of file.annotations.entries()) {
      const imageId = (raw as { image_id?: unknown } | null)?.image_id;
      const entry = byId.get(imageId);
      if (entry === undefined) skipped.push({ path: file.path, reason: `annotations[${index}]: image_id ${JSON.stringify(imageId)} is not in images` });
      if (!entry || entry.error) continue;
      const parsed = Annotation.safeParse(raw);
      if (!parsed.success) entry.error = `${file.path} annotations[${index}].${issue(parsed.error)}`;
      // Crowd regions are not instances (ultralytics' converter drops them too); their masks are RLE anyway.
      else if (!parsed.data.iscrowd) entry.annotations.push({ index, annotation: parsed.data });
    }
  }
  return entries;
}

function taskOf(entries: Iterable<Entry>): Task | null {
  const annotations = [...entries].flatMap((entry) => entry.annotations.map(({ annotation }) => annotation));
  if (annotations.some((annotation) => annotation.keypoints?.length)) return 'pose';
  if (annotations.some((annotation) => Array.isArray(annotation.segmentation) && annotation.segmentation.length > 0)) return 'segment';
  return annotations.length > 0 ? 'detect' : null;
}

/** Pixel x, y (and for keypoints v, kept as is) values normalized by the image size. */
function normalize(values: number[], stride: 2 | 3, width: number, height: number): number[] {
  return values.map((value, index) => (index % stride === 0 ? value / width : index % stride === 1 ? value / height : value));
}

/** The labels of one annotation for the task: a box, a box with keypoints, or one label per polygon. */
function labelsOf(annotation: Annotation, task: Task, classIds: Map<number, number>, width?: number, height?: number): Label[] {
  const classId = classIds.get(annotation.category_id);
  if (classId === undefined) throw new LabelError(`category_id ${annotation.category_id} is not in categories`);
  if (!width || !height) throw new LabelError('the image record has no width and height to normalize with');
  const { bbox, segmentation, keypoints } = annotation;
  if (task === 'segment' && segmentation !== undefined) {
    if (!Array.isArray(segmentation)) throw new LabelError('RLE segmentation is not supported, use polygons');
    if (segmentation.length > 0) return segmentation.map((polygon) => ({ classId, segments: normalize(polygon, 2, width, height) }));
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
function keypointCount(categories: Array<z.output<typeof Category>>, entries: Iterable<Entry>): number {
  const named = categories.find((category) => category.keypoints?.length)?.keypoints?.length;
  if (named) return named;
  for (const entry of entries) {
    for (const { annotation } of entry.annotations) if (annotation.keypoints?.length) return annotation.keypoints.length / 3;
  }
  return 0;
}

/** Every image of the archive: those a COCO file lists with its labels, the others unlabeled. */
export function planCoco(files: CocoFile[], images: string[]): IngestPlan {
  // Category ids may be sparse and unordered: source class indexes follow the ids in ascending order.
  const categories = new Map<number, z.output<typeof Category>>();
  for (const category of files.flatMap((file) => file.categories)) if (!categories.has(category.id)) categories.set(category.id, category);
  const sorted = [...categories.values()].sort((a, b) => a.id - b.id);
  const classIds = new Map(sorted.map((category, index) => [category.id, index]));

  const skipped: Skipped[] = [];
  const entries = collect(files, images, skipped);
  const task = taskOf(entries.values());
  const items = images.map((path): PlanItem => {
    const entry = entries.get(path);
    const split = entry ? entry.split : splitFromPath(path);
    const { labels, labelError } = entry && task ? entryLabels(entry, task, classIds) : { labels: [], labelError: entry?.error };
    const item: PlanItem = { path, labels };
    if (split) item.split = split;
    if (labelError) item.labelError = labelError;
    return item;
  });
  const kptShape: [number, number] | null = task === 'pose' ? [keypointCount(sorted, entries.values()), 3] : null;
  return { format: 'coco', task, classNames: sorted.map((category) => category.name), kptShape, items, skipped };
}
