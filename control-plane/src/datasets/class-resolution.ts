import { classKey } from './class-names.ts';
import type { Dataset } from './dataset.entity.ts';
import { MAX_CLASS_NAMES } from './dataset.schemas.ts';

export type ClassMappingInput = Record<string, number | string | null>;

export interface ClassResolution {
  /** Dataset class index for each source class index; null drops that class's labels. */
  target: Array<number | null>;
  /** The dataset's class list afterwards (existing classes first, in their order). */
  classNames: string[];
  added: string[];
  /** Source classes neither mapped nor matching a dataset class, when they are reported rather than added. */
  unmatched: string[];
}

export interface ClassResolutionOptions {
  /** A source class neither mapped nor matching by name: 'add' appends it (ingest), 'report' lists it in `unmatched` (adopt). */
  unmatched: 'add' | 'report';
  /** The error for a mapping that cannot apply: a JobFailure in a job, an HttpError in a request. */
  fail: (message: string) => Error;
}

/**
 * Maps source classes onto the dataset's. An entry of classMapping wins (an index, a class name —
 * existing or new — or null to drop); other classes match an existing class by name (case ignored beyond
 * 2 characters), else are appended or reported as `options.unmatched` says.
 */
export function resolveClasses(
  dataset: Dataset,
  sourceNames: string[],
  classMapping: ClassMappingInput,
  options: ClassResolutionOptions,
): ClassResolution {
  const classNames = [...dataset.classNames];
  const byKey = new Map(classNames.map((name, index) => [classKey(name), index]));
  const added: string[] = [];
  const unmatched: string[] = [];
  const add = (name: string): number => {
    classNames.push(name);
    added.push(name);
    byKey.set(classKey(name), classNames.length - 1);
    return classNames.length - 1;
  };
  const mappedKeys = new Map(Object.entries(classMapping).map(([name, to]) => [classKey(name), to]));
  const target = sourceNames.map((name) => {
    const to = mappedKeys.get(classKey(name));
    if (to === null) return null;
    if (typeof to === 'number') {
      if (to >= dataset.classNames.length)
        throw options.fail(`classMapping: "${name}" → ${to}, but the dataset has ${dataset.classNames.length} classes`);
      return to;
    }
    // A name the mapping gives is added when new; the source's own name only in 'add' mode.
    const known = byKey.get(classKey(to ?? name));
    if (known !== undefined) return known;
    if (to !== undefined || options.unmatched === 'add') return add(to ?? name);
    unmatched.push(name);
    return null;
  });
  if (classNames.length > MAX_CLASS_NAMES)
    throw options.fail(
      `This would give the dataset ${classNames.length} classes; at most ${MAX_CLASS_NAMES} are allowed`,
    );
  return { target, classNames, added, unmatched };
}
