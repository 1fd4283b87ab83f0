// Which format an extracted archive is in, and its plan: COCO, then YOLO, then classify folders, else raw images.
import { posix } from 'node:path';
import { planClassifyFolders } from './classify-folders.ts';
import { planCoco, readCocoFiles } from './coco.ts';
import { extensionOf, isImagePath, splitFromPath, type IngestPlan, type PlanItem, type ReadFile, type Skipped } from './plan.ts';
import { hasYoloLabels, planYolo, readDatasetYaml } from './yolo.ts';

export { planNdjson } from './ndjson.ts';

const normalizePath = (path: string) => posix.normalize(path).replace(/^(\.\/|\/)+/, '');

// macOS resource forks (`__MACOSX/`, `._x.jpg`), .DS_Store and other dot files are never dataset content.
const isHidden = (path: string) => path.split('/').some((part) => part.startsWith('.') || part === '__MACOSX');

/** Every image without labels, split by its folders. */
function planRaw(images: string[]): IngestPlan {
  const items = images.map((path): PlanItem => {
    const split = splitFromPath(path);
    return split ? { path, split, labels: [] } : { path, labels: [] };
  });
  return { format: 'raw', task: null, classNames: [], kptShape: null, items, skipped: [] };
}

/**
 * Plans an archive. `files` are its regular files, read through `read` by path. Whatever the
 * plan neither adds nor read as labels or metadata is listed in `skipped`, sorted by path.
 */
export async function planArchive(read: ReadFile, files: Array<{ path: string; size: number }>): Promise<IngestPlan> {
  const paths = files.map((file) => normalizePath(file.path)).sort();
  const reported: Skipped[] = paths.filter(isHidden).map((path) => ({ path, reason: 'a hidden or system file' }));
  const visible = paths.filter((path) => !isHidden(path));
  const images = visible.filter(isImagePath);
  const withExtension = (extension: string) => visible.filter((path) => extensionOf(path) === extension);

  const coco = await readCocoFiles(read, withExtension('json'));
  reported.push(...coco.skipped);
  if (coco.files.length > 0) return withRest(planCoco(coco.files, images), coco.files.map((file) => file.path), reported, visible);

  const { yaml, skipped } = await readDatasetYaml(read, visible);
  reported.push(...skipped);
  const used = yaml ? [yaml.path] : [];
  const texts = withExtension('txt');
  const yolo = yaml !== null || hasYoloLabels(images, texts);
  // A yaml naming another task, or label files, rule the folder layout out: class-named folders are common there.
  const classify = yaml?.task === 'classify' || !yolo ? planClassifyFolders(images) : null;
  if (classify) return withRest(classify, used, reported, visible);
  if (yolo) return withRest(await planYolo(read, images, texts, yaml), [...used, ...texts], reported, visible);
  return withRest(planRaw(images), [], reported, visible);
}

/** Adds the problems found while detecting, and every file the plan did not account for, to its skipped list. */
function withRest(plan: IngestPlan, read: string[], reported: Skipped[], paths: string[]): IngestPlan {
  const skipped = [...reported, ...plan.skipped];
  const accounted = new Set([...read, ...plan.items.map((item) => item.path), ...skipped.map((entry) => entry.path)]);
  for (const path of paths) if (!accounted.has(path)) skipped.push({ path, reason: 'not an image, nor a label or metadata file of this format' });
  return { ...plan, skipped: skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) };
}
