// Reads of the images and annotations tables for a dataset's class and image statistics (class-stats.ts): value
// ranges from index lookups, one grouping-sets pass over each table, and exact per-class counts. `sample` is an
// extra condition (beginning with " and ") that keeps a hash-sampled subset of the images, or ''. Every function
// takes the EntityManager first.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** The least and greatest width, height, file size and label count (bigint sizes come as text). */
export interface RangeRow {
  min_w: number | null;
  max_w: number | null;
  min_h: number | null;
  max_h: number | null;
  min_b: string | number | null;
  max_b: string | number | null;
  min_l: number | null;
  max_l: number | null;
}

/** One row per group of a grouping-sets pass: which statistic (`kind`), its integer key or format, and the count. */
export interface GroupRow {
  kind: string;
  k: number | null;
  e: string | null;
  n: number;
}

/** Value ranges of the image columns: each min/max is one lookup in its (dataset_id, column, id) index. */
export async function imageValueRanges(em: EntityManager, datasetId: string, sample: string): Promise<RangeRow> {
  const [raw] = await query<RangeRow>(
    em,
    `select d.*, f.* from
       (select min(width) as min_w, max(width) as max_w, min(height) as min_h, max(height) as max_h from images where dataset_id = ? and error is null${sample}) d,
       (select min(bytes) as min_b, max(bytes) as max_b, min(label_count) as min_l, max(label_count) as max_l from images where dataset_id = ?${sample}) f`,
    [datasetId, datasetId],
  );
  return raw;
}

/** A binning of a value: bins of `width` from `lo`. */
interface Bins {
  lo: number;
  width: number;
}

/*
 * Both passes compute their keys in a subquery kept apart with `offset 0`: the planner then cannot trace
 * a key back to its columns' statistics (where a float column has as many distinct values as rows),
 * estimates the default 200 groups per key and hashes every grouping set in one scan instead of sorting
 * the whole table (3× faster at 100,000 images).
 */

/**
 * One pass over the images: width (w), height (h), file size (b) and objects-per-image (l) bin indexes, formats (e),
 * dimension-heatmap cells (d: row × grid + column, over the spans from the minimum) and images per class (i).
 */
export function imageGroupCounts(
  em: EntityManager,
  datasetId: string,
  sample: string,
  grid: number,
  bins: { width: Bins; height: Bins; bytes: Bins; labels: Bins },
  dims: { minW: number; spanW: number; minH: number; spanH: number },
): Promise<GroupRow[]> {
  const { width, height, bytes, labels } = bins;
  const { minW, spanW, minH, spanH } = dims;
  return query<GroupRow>(
    em,
    `with g as (
       select case when grouping(w) = 0 then 'w' when grouping(h) = 0 then 'h' when grouping(b) = 0 then 'b'
                   when grouping(e) = 0 then 'e' when grouping(l) = 0 then 'l' when grouping(d) = 0 then 'd' else 'x' end as kind,
              coalesce(w, h, b, l, d) as k, e, ids, count(*)::int as n
       from (select case when error is null then (width - ?::int) / ?::int end as w,
                    case when error is null then (height - ?::int) / ?::int end as h,
                    ((bytes - ?::bigint) / ?::bigint)::int as b,
                    ext as e,
                    (label_count - ?::int) / ?::int as l,
                    case when error is null then least((height - ?::int) * ${grid} / ?::int, ${grid - 1}) * ${grid} + least((width - ?::int) * ${grid} / ?::int, ${grid - 1}) end as d,
                    class_ids as ids
             from images where dataset_id = ?${sample} offset 0) s
       group by grouping sets ((w), (h), (b), (e), (l), (d), (ids)))
     select kind, k, e, n from g where kind <> 'x'
     union all
     select 'i', c, null, sum(n)::int from g, unnest(ids) as c where kind = 'x' group by c`,
    [
      width.lo,
      width.width,
      height.lo,
      height.width,
      bytes.lo,
      bytes.width,
      labels.lo,
      labels.width,
      minH,
      spanH,
      minW,
      spanW,
      datasetId,
    ],
  );
}

/** One pass over the annotations: box width (w) and height (h) bins, point counts (p), box-centre cells (c) and annotations per class (k). */
export function annotationGroupCounts(
  em: EntityManager,
  datasetId: string,
  sample: string,
  grid: number,
): Promise<GroupRow[]> {
  // least/greatest skip nulls, hence the case: a label without a box stays out of the box groups.
  const bin = (column: string) => `least(greatest(floor(${column}::float8 * ${grid} + 1e-5), 0), ${grid - 1})::int`;
  return query<GroupRow>(
    em,
    `select case when grouping(bw) = 0 then 'w' when grouping(bh) = 0 then 'h' when grouping(p) = 0 then 'p' when grouping(c) = 0 then 'c' else 'k' end as kind,
            coalesce(bw, bh, p, c, k) as k, null as e, count(*)::int as n
     from (select case when w is not null then ${bin('w')} end as bw,
                  case when h is not null then ${bin('h')} end as bh,
                  nullif(points, 0) as p,
                  case when cx is not null then ${bin('cy')} * ${grid} + ${bin('cx')} end as c,
                  class_id as k
           from annotations where dataset_id = ?${sample} offset 0) a
     group by grouping sets ((bw), (bh), (p), (c), (k))`,
    [datasetId],
  );
}

/** Exact per-class counts: annotations (k) from the (dataset_id, class_id) index, images (i) from their distinct class sets. */
export function exactClassCounts(em: EntityManager, datasetId: string): Promise<GroupRow[]> {
  return query<GroupRow>(
    em,
    `select 'k' as kind, class_id as k, null as e, count(*)::int as n from annotations where dataset_id = ? group by class_id
     union all
     select 'i', c, null, sum(n)::int from (select class_ids, count(*) as n from images where dataset_id = ? group by class_ids offset 0) s, unnest(class_ids) as c group by c`,
    [datasetId, datasetId],
  );
}
