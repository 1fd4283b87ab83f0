// The image_class_sets table (see ImageClassSet): its triggers on images add rows; here they are summed and compacted.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Split } from '../datasets/dataset.entity.ts';
import { pgArray, query } from '../db/sql.ts';

/** A dataset's rows are compacted once a read finds more than this many (one per combination after). */
const COMPACT_PAST_ROWS = 1000;

/**
 * How many of the dataset's images are in the split, labeled or not, and have at least one class of each of
 * `classSets` (each filter if given).
 */
export async function countByClassSets(
  em: EntityManager,
  datasetId: string,
  filter: { split?: Split; labeled?: boolean; classSets?: number[][] },
): Promise<number> {
  const conditions = ['true'];
  const params: unknown[] = [];
  const condition = (sql: string, param: unknown) => {
    conditions.push(sql);
    params.push(param);
  };
  if (filter.split) condition('split = ?', filter.split);
  if (filter.labeled !== undefined) condition('labeled = ?', filter.labeled);
  for (const classIds of filter.classSets ?? []) condition('class_ids && ?::int[]', pgArray(classIds));
  const [row] = await query<{ total: number; rows: number }>(
    em,
    `select coalesce(sum(images) filter (where ${conditions.join(' and ')}), 0)::int as total, count(*)::int as rows
     from image_class_sets where dataset_id = ?`,
    [...params, datasetId],
  );
  if (row.rows > COMPACT_PAST_ROWS) await compactClassSets(em, datasetId);
  return row.total;
}

/**
 * Replaces the dataset's rows by their sums, one per combination. Safe beside writers and other compactions: a row
 * is summed by the one statement that deletes it, and rows added meanwhile stay as they are.
 */
async function compactClassSets(em: EntityManager, datasetId: string): Promise<void> {
  await query(
    em,
    `with gone as (delete from image_class_sets where dataset_id = ? returning split, labeled, class_ids, images)
     insert into image_class_sets (dataset_id, split, labeled, class_ids, images)
     select ?, split, labeled, class_ids, sum(images)::int from gone group by split, labeled, class_ids having sum(images) <> 0`,
    [datasetId, datasetId],
  );
}
