import type { Test } from 'tap';
import { query } from '../../control-plane/src/db/sql.ts';
import type { TestServer } from './server.ts';

/**
 * Checks that a dataset's counters and every derived column agree with its rows: the counters with the
 * images, each image's labelCount and classIds with its annotations, every classId in range and equal
 * to the classId inside the saved label, and the counts kept per class set with the images.
 */
export async function checkDatasetInvariants(t: Test, server: TestServer, datasetId: string): Promise<void> {
  const em = server.services().em;
  const [counters] = await query<Record<string, number>>(
    em,
    `select image_count, annotation_count, train_count, val_count, test_count, labeled_count, error_count, jsonb_array_length(class_names) as classes from datasets where id = ?`,
    [datasetId],
  );
  const [rows] = await query<Record<string, number>>(
    em,
    `select count(*)::int as image_count, coalesce(sum(label_count), 0)::int as annotation_count,
       count(*) filter (where split = 'train')::int as train_count, count(*) filter (where split = 'val')::int as val_count,
       count(*) filter (where split = 'test')::int as test_count, count(*) filter (where label_count > 0)::int as labeled_count,
       count(*) filter (where error is not null)::int as error_count
     from images where dataset_id = ?`,
    [datasetId],
  );
  const { classes, ...kept } = counters;
  t.same(kept, rows, 'dataset counters match the image rows');
  const [mismatch] = await query<{
    images: number;
    annotations: number;
    out_of_range: number;
    label_json: number;
    total: number;
  }>(
    em,
    `select
       (select count(*)::int from images i where i.dataset_id = ? and (i.label_count <> (select count(*) from annotations a where a.image_id = i.id)
          or i.class_ids <> coalesce((select array_agg(distinct a.class_id order by a.class_id) from annotations a where a.image_id = i.id), '{}'))) as images,
       (select count(*)::int from annotations a where a.dataset_id = ? and not exists (select 1 from images i where i.id = a.image_id and i.dataset_id = a.dataset_id)) as annotations,
       (select count(*)::int from annotations a where a.dataset_id = ? and (a.class_id < 0 or a.class_id >= ?)) as out_of_range,
       (select count(*)::int from annotations a where a.dataset_id = ? and (a.label->>'classId')::int <> a.class_id) as label_json,
       (select count(*)::int from annotations a where a.dataset_id = ?) as total`,
    [datasetId, datasetId, datasetId, classes, datasetId, datasetId],
  );
  t.same(
    { ...mismatch, total: undefined },
    { images: 0, annotations: 0, out_of_range: 0, label_json: 0, total: undefined },
    'labelCount, classIds and classId agree with the annotations',
  );
  t.equal(mismatch.total, rows.annotation_count, 'annotationCount is the number of annotation rows');
  const keptPerSet = await query(
    em,
    `select split, labeled, class_ids::text, sum(images)::int as images from image_class_sets where dataset_id = ?
     group by 1, 2, 3 having sum(images) <> 0 order by 1, 2, 3`,
    [datasetId],
  );
  const counted = await query(
    em,
    `select split, label_count > 0 as labeled, class_ids::text, count(*)::int as images from images where dataset_id = ?
     group by 1, 2, 3 order by 1, 2, 3`,
    [datasetId],
  );
  t.same(keptPerSet, counted, 'the images per split, labeled and class set (filtered totals) match the image rows');
}
