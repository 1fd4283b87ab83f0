// Which format an extracted archive is in, and its plan: COCO, then YOLO, then classify folders, else raw images.
import { posix } from 'node:path';
import { planClassifyFolders } from './classify-folders.ts';
import { planCoco, readCoco } from './coco.ts';
import {
  extensionOf,
  isImagePath,
  splitFromPath,
  type IngestPlan,
  type PlanItem,
  type ReadableFiles,
  type SizedReader,
} from './plan.ts';
import { Skips } from './skips.ts';
import { datasetYamlPaths, hasYoloLabels, planYolo, readDatasetYaml } from './yolo.ts';

export { planNdjson } from './ndjson.ts';

const normalizePath = (path: string) => posix.normalize(path).replace(/^(\.\/|\/)+/, '');

// macOS resource forks (`__MACOSX/`, `._x.jpg`), .DS_Store and other dot files are never dataset content.
const isHidden = (path: string) => path.split('/').some((part) => part.startsWith('.') || part === '__MACOSX');
// Roboflow's exports carry README.dataset.txt and README.roboflow.txt: documentation, never label files.
const isReadme = (path: string) => /^readme(\.[^/]+)?\.txt$/i.test(posix.basename(path));

/** Every image without labels, split by its folders. */
function planRaw(images: string[]): IngestPlan {
  const items = images.map((path): PlanItem => {
    const split = splitFromPath(path);
    return split ? { path, split, labels: [] } : { path, labels: [] };
  });
  return { format: 'raw', task: null, classNames: [], kptShape: null, items, skipped: new Skips() };
}

/**
 * Plans an archive. `files` are its regular files, read through `source` by path. Whatever the plan neither
 * adds nor read as labels or metadata is counted in `skipped`. A DatasetFileError when the dataset as a
 * whole cannot be ingested (class names no dataset could have, labels too large to hold).
 */
export async function planArchive(
  source: ReadableFiles,
  files: Array<{ path: string; size: number }>,
): Promise<IngestPlan> {
  const sizes = new Map(files.map((file) => [normalizePath(file.path), file.size]));
  const reader: SizedReader = {
    read: (path) => source.read(path),
    stream: (path) => source.stream(path),
    sizeOf: (path) => sizes.get(path) ?? 0,
  };
  const paths = [...sizes.keys()].sort();
  const reported = new Skips();
  for (const path of paths.filter(isHidden)) reported.add(path, 'a hidden or system file');
  const visible = paths.filter((path) => !isHidden(path));
  const images = visible.filter(isImagePath);
  const withExtension = (extension: string) => visible.filter((path) => extensionOf(path) === extension);

  // Every .json is read as COCO (and used or reported), every dataset YAML is used or reported.
  const jsons = withExtension('json');
  const coco = await readCoco(reader, jsons, images, reported);
  if (coco) return withRest(planCoco(coco, images), jsons, reported, visible);

  const yaml = await readDatasetYaml(reader, visible, reported);
  const examined = [...jsons, ...datasetYamlPaths(visible)];
  const texts = withExtension('txt').filter((path) => !isReadme(path));
  const yolo = yaml !== null || hasYoloLabels(images, texts);
  // A yaml naming another task, or label files, rule the folder layout out: class-named folders are common there.
  const classify = yaml?.task === 'classify' || !yolo ? planClassifyFolders(images) : null;
  if (classify) return withRest(classify, examined, reported, visible);
  if (yolo) return withRest(await planYolo(reader, images, texts, yaml), [...examined, ...texts], reported, visible);
  return withRest(planRaw(images), examined, reported, visible);
}

/** Adds the problems found while detecting, and every file the plan neither read nor added, to its skipped entries. */
function withRest(plan: IngestPlan, examined: string[], reported: Skips, paths: string[]): IngestPlan {
  reported.merge(plan.skipped);
  const accounted = new Set([...examined, ...plan.items.map((item) => item.path)]);
  for (const path of paths)
    if (!accounted.has(path)) reported.add(path, 'not an image, nor a label or metadata file of this format');
  return { ...plan, skipped: reported };
}
