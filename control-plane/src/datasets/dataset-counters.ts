import type { EntityManager } from '@mikro-orm/postgresql';
import { addToCounters, lockDatasetRow, recountFromImages, type CountDelta } from './dataset.store.ts';
import type { Split } from './dataset.entity.ts';

/**
 * Every write to a dataset's images, labels or classes runs in a transaction that first takes the
 * dataset's row lock. Writers of one dataset therefore go one at a time, and the counters they adjust
 * in the same transaction always match the rows.
 */
export async function lockDataset(em: EntityManager, datasetId: string): Promise<void> {
  await lockDatasetRow(em, datasetId);
}

/** An image as the counters see it. */
export interface CountedImage {
  split: Split;
  labelCount: number;
  hasError: boolean;
}

export type { CountDelta } from './dataset.store.ts';

const zero = (): CountDelta => ({ images: 0, annotations: 0, train: 0, val: 0, test: 0, labeled: 0, errors: 0 });

/** What adding (sign 1) or removing (sign -1) these images does to the counters. */
export function countDelta(images: CountedImage[], sign: 1 | -1, into: CountDelta = zero()): CountDelta {
  for (const image of images) {
    into.images += sign;
    into.annotations += sign * image.labelCount;
    into[image.split] += sign;
    if (image.labelCount > 0) into.labeled += sign;
    if (image.hasError) into.errors += sign;
  }
  return into;
}

/** A change of images from `before` to `after`, counted as removing one and adding the other. */
export function changeDelta(before: CountedImage[], after: CountedImage[]): CountDelta {
  return countDelta(after, 1, countDelta(before, -1));
}

export function addDelta(a: CountDelta, b: CountDelta): CountDelta {
  return {
    images: a.images + b.images,
    annotations: a.annotations + b.annotations,
    train: a.train + b.train,
    val: a.val + b.val,
    test: a.test + b.test,
    labeled: a.labeled + b.labeled,
    errors: a.errors + b.errors,
  };
}

/** Applies a delta and moves the dataset's revision (caches keyed by it are now stale). Needs the lock. */
export async function applyDelta(em: EntityManager, datasetId: string, delta: CountDelta): Promise<void> {
  await addToCounters(em, datasetId, delta);
}

/** Sets every counter from the rows: after class operations, which touch many images at once. Needs the lock. */
export async function recount(em: EntityManager, datasetId: string): Promise<void> {
  await recountFromImages(em, datasetId);
}
