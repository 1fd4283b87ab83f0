import type { EntityManager } from '@mikro-orm/postgresql';
import type { Dataset } from '../datasets/dataset.entity.ts';
import {
  annotationsOfImages,
  deleteAnnotationsOfImages,
  insertAnnotationRows,
  type AnnotationValues,
} from './annotation.store.ts';
import { setLabelSummaries } from './image.store.ts';
import { validateLabels, type Label, type LabelShape } from './labels.ts';

export interface CheckedLabels {
  labels: Label[];
  shapes: Array<LabelShape | null>;
}

/** Validates labels against the dataset as it is now (call under the dataset lock, so classes cannot change meanwhile). */
export function checkLabels(dataset: Dataset, labels: Label[]): CheckedLabels {
  return validateLabels(dataset.task, dataset.classNames.length, labels, { kptShape: dataset.kptShape ?? null });
}

/** The sorted, distinct class IDs of a label list: what images.class_ids holds. */
export function classIdsOf(labels: Label[]): number[] {
  return [...new Set(labels.map((label) => label.classId))].sort((a, b) => a - b);
}

/** Inserts annotation rows for images that have none yet (new images, or after their rows were deleted). */
export async function insertAnnotations(
  em: EntityManager,
  datasetId: string,
  entries: Array<{ imageId: string } & CheckedLabels>,
): Promise<void> {
  const rows = entries.flatMap(({ imageId, labels, shapes }) =>
    labels.map((label, position): AnnotationValues => {
      const shape = shapes[position];
      return [
        imageId,
        position,
        datasetId,
        label.classId,
        JSON.stringify(label),
        shape?.cx ?? null,
        shape?.cy ?? null,
        shape?.w ?? null,
        shape?.h ?? null,
        shape?.points ?? 0,
      ];
    }),
  );
  await insertAnnotationRows(em, rows);
}

/**
 * Replaces the labels of images: their annotation rows, and the labelCount and classIds that mirror them
 * on the image row (one statement for all). Callers hold the dataset lock and adjust the counters.
 */
export async function replaceLabels(
  em: EntityManager,
  datasetId: string,
  entries: Array<{ imageId: string } & CheckedLabels>,
): Promise<void> {
  if (entries.length === 0) return;
  const imageIds = entries.map((entry) => entry.imageId);
  await deleteAnnotationsOfImages(em, imageIds);
  await insertAnnotations(em, datasetId, entries);
  await setLabelSummaries(
    em,
    imageIds,
    entries.map((entry) => entry.labels.length),
    entries.map((entry) => `{${classIdsOf(entry.labels).join(',')}}`),
  );
}

/** Labels of images in position order, keyed by image id; `cap` keeps only the first few of each (list previews). */
export async function labelsOf(em: EntityManager, imageIds: string[], cap?: number): Promise<Map<string, Label[]>> {
  const byImage = new Map<string, Label[]>();
  if (imageIds.length === 0) return byImage;
  const rows = await annotationsOfImages(em, imageIds, cap);
  for (const row of rows) {
    const labels = byImage.get(row.image_id);
    if (labels) labels.push(row.label);
    else byImage.set(row.image_id, [row.label]);
  }
  return byImage;
}
