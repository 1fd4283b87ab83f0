import type { EntityManager } from '@mikro-orm/postgresql';
import type { CountDelta } from '../datasets/dataset-counters.ts';
import type { Dataset, Split } from '../datasets/dataset.entity.ts';
import { copyImageRows } from './image.store.ts';

/** A source dataset's class that keeps its labels in the copy, and its class index there. */
export interface ClassMapEntry {
  datasetId: string;
  from: number;
  to: number;
}

export type CopySource = { datasetId: string } | { imageIds: string[] };

export interface CopyOptions {
  /** Labels of classes not in the map are dropped: an empty map copies the images unlabeled. */
  classMap: ClassMapEntry[];
  /** Every copy goes to this split; without it each keeps its own. */
  split?: Split;
}

/**
 * Copies image rows and their labels into `target` in one statement: new ids, the same bytes (shared by
 * hash; the caller makes them present under the target's workspace). Kept labels get the mapped class
 * (on the row and inside the saved label) and positions without gaps; labelCount and classIds follow.
 * The labels were valid for a dataset of the same task and pose shape, so they are not checked again.
 * The caller holds the target's lock and the sources'; returns what the copies add to the counters.
 */
export async function copyImages(
  em: EntityManager,
  target: Dataset,
  source: CopySource,
  options: CopyOptions,
): Promise<CountDelta> {
  const { classMap } = options;
  return copyImageRows(
    em,
    source,
    {
      datasetIds: classMap.map((entry) => entry.datasetId),
      from: classMap.map((entry) => entry.from),
      to: classMap.map((entry) => entry.to),
    },
    { workspaceId: target.workspace.id, datasetId: target.id, split: options.split ?? null },
  );
}
