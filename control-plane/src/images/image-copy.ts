import type { EntityManager } from '@mikro-orm/postgresql';
import type { CountDelta } from '../datasets/dataset-counters.ts';
import type { Dataset, Split } from '../datasets/dataset.entity.ts';
import { NEW_ID_SQL } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';

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
export async function copyImages(em: EntityManager, target: Dataset, source: CopySource, options: CopyOptions): Promise<CountDelta> {
  const [selection, selected] = 'datasetId' in source ? ['i.dataset_id = ?', source.datasetId] : ['i.id = any(?::text[])', pgArray(source.imageIds)];
  const { classMap } = options;
  const [delta] = await query<CountDelta>(
    em,
    `with src as materialized (select i.*, ${NEW_ID_SQL} as new_id from images i where ${selection}),
     kept as materialized (
       select s.new_id, a.position, m.to_id as class_id, a.label, a.cx, a.cy, a.w, a.h, a.points
       from src s join annotations a on a.image_id = s.id
       join unnest(?::text[], ?::int[], ?::int[]) as m(dataset_id, from_id, to_id) on m.dataset_id = s.dataset_id and m.from_id = a.class_id),
     per_image as (select new_id, count(*)::int as n, array_agg(distinct class_id order by class_id) as class_ids from kept group by new_id),
     copied as (
       insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, channels, split, bytes, error, metadata, search_text, label_count, class_ids, faces_blurred)
       select s.new_id, clock_timestamp(), clock_timestamp(), ?, ?, s.hash, s.ext, s.name, s.width, s.height, s.channels, coalesce(?, s.split), s.bytes, s.error,
              s.metadata, s.search_text, coalesce(p.n, 0), coalesce(p.class_ids, '{}'), s.faces_blurred
       from src s left join per_image p on p.new_id = s.new_id
       order by s.created_at, s.id
       returning split, label_count, error),
     copied_labels as (
       insert into annotations (image_id, position, dataset_id, class_id, label, cx, cy, w, h, points)
       select new_id, (row_number() over (partition by new_id order by position) - 1)::int, ?, class_id, jsonb_set(label, '{classId}', to_jsonb(class_id)), cx, cy, w, h, points
       from kept)
     select count(*)::int as images, coalesce(sum(label_count), 0)::int as annotations, count(*) filter (where split = 'train')::int as train,
       count(*) filter (where split = 'val')::int as val, count(*) filter (where split = 'test')::int as test,
       count(*) filter (where label_count > 0)::int as labeled, count(*) filter (where error is not null)::int as errors
     from copied`,
    [
      selected,
      pgArray(classMap.map((entry) => entry.datasetId)),
      pgArray(classMap.map((entry) => entry.from)),
      pgArray(classMap.map((entry) => entry.to)),
      target.workspace.id,
      target.id,
      options.split ?? null,
      target.id,
    ],
  );
  return delta;
}
