// The annotations table: an image's labels, one row per label in position order, with the class and the box or
// polygon shape indexed beside the saved label. The labelCount and classIds mirrored on images are image.store.ts's.
// Every function takes the EntityManager first, so it runs inside the caller's transaction (and dataset lock).
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import type { Label } from './labels.ts';

/** One annotation row: image id, position, dataset id, class id, label (JSON text), cx, cy, w, h, points. */
export type AnnotationValues = [
  string,
  number,
  string,
  number,
  string,
  number | null,
  number | null,
  number | null,
  number | null,
  number,
];

/** Rows per INSERT: 10 parameters each, under PostgreSQL's 65,535-parameter limit. */
const ROWS_PER_INSERT = 2000;

/** Inserts the annotation rows, ROWS_PER_INSERT per statement. */
export async function insertAnnotationRows(em: EntityManager, rows: AnnotationValues[]): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const chunk = rows.slice(start, start + ROWS_PER_INSERT);
    await query(
      em,
      `insert into annotations (image_id, position, dataset_id, class_id, label, cx, cy, w, h, points) values ${chunk.map(() => '(?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?)').join(', ')}`,
      chunk.flat(),
    );
  }
}

/** Deletes every label of the images. */
export async function deleteAnnotationsOfImages(em: EntityManager, imageIds: string[]): Promise<void> {
  await query(em, 'delete from annotations where image_id = any(?::text[])', [pgArray(imageIds)]);
}

/** The labels of the images, by image id then position; with `cap`, only those at positions below it. */
export function annotationsOfImages(
  em: EntityManager,
  imageIds: string[],
  cap?: number,
): Promise<Array<{ image_id: string; label: Label }>> {
  return query<{ image_id: string; label: Label }>(
    em,
    `select image_id, label from annotations where image_id = any(?::text[])${cap === undefined ? '' : ' and position < ?'} order by image_id, position`,
    cap === undefined ? [pgArray(imageIds)] : [pgArray(imageIds), cap],
  );
}

/** Gives the dataset's labels of the source classes the target class (on the row and inside the saved label). */
export async function reassignAnnotationClasses(
  em: EntityManager,
  datasetId: string,
  sourceClassIds: number[],
  targetClassId: number,
): Promise<void> {
  await query(
    em,
    `update annotations set class_id = ?, label = jsonb_set(label, '{classId}', to_jsonb(?::int)) where dataset_id = ? and class_id = any(?::int[])`,
    [targetClassId, targetClassId, datasetId, pgArray(sourceClassIds)],
  );
}

/** Deletes the dataset's labels of the classes; returns how many were deleted. */
export async function deleteAnnotationsOfClasses(
  em: EntityManager,
  datasetId: string,
  classIds: number[],
): Promise<number> {
  const deleted = await query(
    em,
    'delete from annotations where dataset_id = ? and class_id = any(?::int[]) returning 1',
    [datasetId, pgArray(classIds)],
  );
  return deleted.length;
}

/**
 * Shifts the class of the dataset's labels down past the removed classes (class ids from `lowest` to `highest`), on
 * the row and inside the saved label.
 */
export async function shiftAnnotationClasses(
  em: EntityManager,
  datasetId: string,
  removed: number[],
  lowest: number,
  highest: number,
): Promise<void> {
  await query(
    em,
    `update annotations a set class_id = a.class_id - s.shift, label = jsonb_set(a.label, '{classId}', to_jsonb(a.class_id - s.shift))
       from (select c.id, (select count(*)::int from unnest(?::int[]) r where r < c.id) as shift from generate_series(?::int, ?::int) c(id)) s
       where a.dataset_id = ? and a.class_id = s.id and s.shift > 0`,
    [pgArray(removed), lowest, highest, datasetId],
  );
}
