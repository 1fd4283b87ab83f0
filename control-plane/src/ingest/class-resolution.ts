import { classKey } from '../datasets/class-names.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { MAX_CLASS_NAMES } from '../datasets/dataset.schemas.ts';
import { JobFailure } from '../jobs/job-runner.ts';

export interface ClassResolution {
  /** Dataset class index for each source class index; null drops that class's labels. */
  target: Array<number | null>;
  /** The dataset's class list after the ingest (existing classes first, in their order). */
  classNames: string[];
  added: string[];
}

/**
 * Maps the source's classes onto the dataset's. An entry of classMapping wins (an index, a class name —
 * existing or new — or null to drop); other classes match an existing class by name (case ignored beyond
 * 2 characters) or are appended. On a dataset without classes this creates them in the source's order.
 */
export function resolveClasses(dataset: Dataset, sourceNames: string[], classMapping: Record<string, number | string | null>): ClassResolution {
  const classNames = [...dataset.classNames];
  const byKey = new Map(classNames.map((name, index) => [classKey(name), index]));
  const added: string[] = [];
  const indexOf = (name: string): number => {
    const known = byKey.get(classKey(name));
    if (known !== undefined) return known;
    classNames.push(name);
    added.push(name);
    byKey.set(classKey(name), classNames.length - 1);
    return classNames.length - 1;
  };
  const mappedKeys = new Map(Object.entries(classMapping).map(([name, to]) => [classKey(name), to]));
  const target = sourceNames.map((name) => {
    const to = mappedKeys.has(classKey(name)) ? mappedKeys.get(classKey(name)) : name;
    if (to === null || to === undefined) return null;
    if (typeof to === 'number') {
      if (to >= dataset.classNames.length) throw new JobFailure(`classMapping: "${name}" → ${to}, but the dataset has ${dataset.classNames.length} classes`);
      return to;
    }
    return indexOf(to);
  });
  if (classNames.length > MAX_CLASS_NAMES) throw new JobFailure(`The ingest would give the dataset ${classNames.length} classes; at most ${MAX_CLASS_NAMES} are allowed`);
  return { target, classNames, added };
}
