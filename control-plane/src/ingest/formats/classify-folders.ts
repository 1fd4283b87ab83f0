// Classification archives in the ultralytics layout: a folder per class, optionally below split folders.
import { splitFromName, type IngestPlan, type PlanItem } from './plan.ts';
import { Skips } from './skips.ts';

// A split folder, or the folders of a YOLO/raw layout, are never class folders.
const isClassFolder = (name: string) => !splitFromName(name) && name !== 'images' && name !== 'labels';

/**
 * The folder all images share when the archive wraps everything in one (`flowers/daisy/x.jpg`), unless that
 * folder is a split; "" when there is none. A single class folder is thus read as a wrapper: such an archive
 * is planned as raw images rather than guessed to be one class.
 */
function wrapperOf(images: string[]): string {
  const [top] = images[0].split('/');
  const shared = images.every((path) => path.startsWith(`${top}/`));
  return shared && !splitFromName(top) ? `${top}/` : '';
}

/**
 * `<split>/<class>/<image>` or `<class>/<image>` for every image; null when any image sits elsewhere. Class
 * names are sorted like ultralytics sorts the folders (code point order), giving the source class indexes.
 */
export function planClassifyFolders(images: string[]): IngestPlan | null {
  if (images.length === 0) return null;
  const wrapper = wrapperOf(images);
  const placed: Array<{ item: PlanItem; className: string }> = [];
  for (const path of images) {
    const parts = path.slice(wrapper.length).split('/');
    const split = parts.length === 3 ? splitFromName(parts[0]) : undefined;
    const className = split ? parts[1] : parts.length === 2 ? parts[0] : undefined;
    if (className === undefined || !isClassFolder(className)) return null;
    placed.push({ item: split ? { path, split, labels: [] } : { path, labels: [] }, className });
  }
  const classNames = [...new Set(placed.map(({ className }) => className))].sort();
  const classIds = new Map(classNames.map((name, index) => [name, index]));
  const items = placed.map(({ item, className }) => ({ ...item, labels: [{ classId: classIds.get(className)! }] }));
  return { format: 'classify-folders', task: 'classify', classNames, kptShape: null, items, skipped: new Skips() };
}
