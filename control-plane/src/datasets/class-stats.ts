import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { query } from '../db/sql.ts';
import type { ClassStats } from './class-stats.schemas.ts';
import type { Dataset } from './dataset.entity.ts';

/** Above this many images, image and annotation statistics come from a deterministic sample of about this many. */
export const SAMPLE_ABOVE = 200_000;
/** Cells per side of both heatmaps, and bins of the bbox width/height histograms. */
const GRID = 20;
/** Bins a data-range histogram aims at; nice widths give between 9 and 22. */
const TARGET_BINS = 20;
/** The sample keeps images whose id hashes below a threshold out of this range (hashtext's low 20 bits). */
const HASH_RANGE = 1 << 20;

type Result = z.input<typeof ClassStats>;
type Bin = Result['imageStats']['widthHistogram'][number];

/** Integer-valued bins: the lower edge of the first bin and the width of each. */
interface Binning {
  lo: number;
  width: number;
  bins: number;
}

/** The smallest 1, 2 or 5 × 10^n (at least 1) that covers `span` in TARGET_BINS bins, bins aligned on multiples of it. */
export function niceBinning(min: number, max: number): Binning {
  const raw = (max - min) / TARGET_BINS;
  let width = 1;
  if (raw > 1) {
    let power = 10 ** Math.floor(Math.log10(raw));
    if (power * 10 <= raw) power *= 10;
    width = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= raw) ?? power * 10;
  }
  const lo = Math.floor(min / width) * width;
  return { lo, width, bins: Math.floor((max - lo) / width) + 1 };
}

/** Dense bins, empty ones included, from per-bin counts. */
function histogram(binning: Binning | null, counts: Map<number, number>): Bin[] {
  if (!binning) return [];
  return Array.from({ length: binning.bins }, (_, i) => ({ bin: binning.lo + i * binning.width, count: counts.get(i) ?? 0, size: binning.width }));
}

/** The fixed 0-1 histograms of normalized box sizes. */
function unitHistogram(counts: Map<number, number>): Bin[] {
  return Array.from({ length: GRID }, (_, i) => ({ bin: i / GRID, count: counts.get(i) ?? 0, size: 1 / GRID }));
}

/** A GRID × GRID heatmap from counts keyed by row × GRID + column. */
function grid(cells: Map<number, number>): { bins: number[][]; maxCount: number } {
  const bins = Array.from({ length: GRID }, () => new Array<number>(GRID).fill(0));
  let maxCount = 0;
  for (const [cell, n] of cells) {
    bins[Math.floor(cell / GRID)][cell % GRID] = n;
    maxCount = Math.max(maxCount, n);
  }
  return { bins, maxCount };
}

interface DatasetRow {
  revision: number;
  image_count: number;
  class_names: string[];
  cache: Result | null;
}

interface RangeRow {
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
interface GroupRow {
  kind: string;
  k: number | null;
  e: string | null;
  n: number;
}

/**
 * Class and image statistics of a dataset. Served from `datasets.stats_cache` while the dataset's revision
 * has not moved; otherwise computed in SQL and cached under the revision read first, unless a write moved
 * it meanwhile. The work is one grouping-sets pass over the images and one over the annotations, run side
 * by side on two connections (when the caller is not in a transaction), after index lookups for the value
 * ranges. Above SAMPLE_ABOVE images (`sampleAbove`, for tests) both passes read a sample of about that
 * many, and a third query counts classes exactly.
 * Outside a transaction a write landing meanwhile may show in one pass and not the other; such a result
 * is returned but not cached.
 */
export async function classStats(em: EntityManager, dataset: Dataset, options: { sampleAbove?: number } = {}): Promise<Result> {
  const sampleAbove = options.sampleAbove ?? SAMPLE_ABOVE;
  const [row] = await query<DatasetRow>(
    em,
    'select revision, image_count, class_names, case when stats_revision = revision then stats_cache end as cache from datasets where id = ?',
    [dataset.id],
  );
  if (!row) throw new Error(`dataset ${dataset.id} not found`);
  if (row.cache) {
    // Caches written before the normalized histograms had their own names lack them: the same histograms.
    const { imageStats } = row.cache;
    const normalized = {
      bboxWidthNormHistogram: imageStats.bboxWidthNormHistogram ?? imageStats.bboxWidthHistogram,
      bboxHeightNormHistogram: imageStats.bboxHeightNormHistogram ?? imageStats.bboxHeightHistogram,
    };
    return { ...row.cache, imageStats: { ...imageStats, ...normalized }, cached: true };
  }

  const sampled = row.image_count > sampleAbove;
  const threshold = Math.ceil((HASH_RANGE * sampleAbove) / Math.max(row.image_count, 1));
  // The same images on both tables: annotations are sampled by their image's id.
  const imageSample = sampled ? ` and (hashtext(id) & ${HASH_RANGE - 1}) < ${threshold}` : '';
  const annotationSample = sampled ? ` and (hashtext(image_id) & ${HASH_RANGE - 1}) < ${threshold}` : '';

  const [{ ranges, groups: imageGroups }, annotationGroups, exactClasses] = await Promise.all([
    imageRanges(em, dataset.id, imageSample).then(async (ranges) => ({ ranges, groups: await imagePass(em, dataset.id, imageSample, ranges) })),
    annotationPass(em, dataset.id, annotationSample),
    sampled ? classCounts(em, dataset.id) : null,
  ]);
  const counts = (rows: GroupRow[], kind: string) => {
    const map = new Map<number, number>();
    for (const r of rows) if (r.kind === kind && r.k !== null) map.set(r.k, r.n);
    return map;
  };

  const classNames = row.class_names;
  const annotationsPerClass = counts(exactClasses ?? annotationGroups, 'k');
  const imagesPerClass = counts(exactClasses ?? imageGroups, 'i');
  const classes = classNames.map((_, classId) => ({ classId, count: annotationsPerClass.get(classId) ?? 0, imageCount: imagesPerClass.get(classId) ?? 0 }));

  const formats = imageGroups.filter((r) => r.kind === 'e').sort((a, b) => b.n - a.n || String(a.e).localeCompare(String(b.e)));
  const formatDistribution = Object.fromEntries(formats.map((r) => [r.e ?? '', r.n]));
  const sampleSize = formats.reduce((sum, r) => sum + r.n, 0);

  // Point counts come exact (few distinct values) and are binned here.
  const pointCounts = counts(annotationGroups, 'p');
  let points: Binning | null = null;
  const pointBins = new Map<number, number>();
  if (pointCounts.size > 0) {
    const values = [...pointCounts.keys()];
    const binning = niceBinning(values.reduce((a, b) => Math.min(a, b)), values.reduce((a, b) => Math.max(a, b)));
    for (const [value, n] of pointCounts) {
      const bin = Math.floor((value - binning.lo) / binning.width);
      pointBins.set(bin, (pointBins.get(bin) ?? 0) + n);
    }
    points = binning;
  }

  const widths = unitHistogram(counts(annotationGroups, 'w'));
  const heights = unitHistogram(counts(annotationGroups, 'h'));
  const result: Result = {
    classes,
    imageStats: {
      widthHistogram: histogram(ranges.width, counts(imageGroups, 'w')),
      heightHistogram: histogram(ranges.height, counts(imageGroups, 'h')),
      pointsHistogram: histogram(points, pointBins),
      fileSizeHistogram: histogram(ranges.bytes, counts(imageGroups, 'b')),
      objectsPerImageHistogram: histogram(ranges.labels, counts(imageGroups, 'l')),
      bboxWidthHistogram: widths,
      bboxHeightHistogram: heights,
      bboxWidthNormHistogram: widths,
      bboxHeightNormHistogram: heights,
      formatDistribution,
    },
    locationHeatmap: grid(counts(annotationGroups, 'c')),
    dimensionHeatmap: {
      ...grid(counts(imageGroups, 'd')),
      minWidth: ranges.raw.min_w ?? 0,
      maxWidth: ranges.raw.max_w ?? 0,
      minHeight: ranges.raw.min_h ?? 0,
      maxHeight: ranges.raw.max_h ?? 0,
    },
    classNames,
    cached: false,
    sampleSize: sampled ? sampleSize : null,
  };
  await query(em, 'update datasets set stats_cache = ?::jsonb, stats_revision = ? where id = ? and revision = ?', [JSON.stringify(result), row.revision, dataset.id, row.revision]);
  return result;
}

interface Ranges {
  raw: RangeRow;
  width: Binning | null;
  height: Binning | null;
  bytes: Binning | null;
  labels: Binning | null;
}

/** Value ranges of the image columns: each min/max is one lookup in its (dataset_id, column, id) index. */
async function imageRanges(em: EntityManager, datasetId: string, sample: string): Promise<Ranges> {
  const [raw] = await query<RangeRow>(
    em,
    `select d.*, f.* from
       (select min(width) as min_w, max(width) as max_w, min(height) as min_h, max(height) as max_h from images where dataset_id = ? and error is null${sample}) d,
       (select min(bytes) as min_b, max(bytes) as max_b, min(label_count) as min_l, max(label_count) as max_l from images where dataset_id = ?${sample}) f`,
    [datasetId, datasetId],
  );
  const range = (min: string | number | null, max: string | number | null) => (min === null || max === null ? null : niceBinning(Number(min), Number(max)));
  return { raw, width: range(raw.min_w, raw.max_w), height: range(raw.min_h, raw.max_h), bytes: range(raw.min_b, raw.max_b), labels: range(raw.min_l, raw.max_l) };
}

/*
 * Both passes compute their keys in a subquery kept apart with `offset 0`: the planner then cannot trace
 * a key back to its columns' statistics (where a float column has as many distinct values as rows),
 * estimates the default 200 groups per key and hashes every grouping set in one scan instead of sorting
 * the whole table (3× faster at 100,000 images).
 */

/**
 * One pass over the images: width (w), height (h), file size (b) and objects-per-image (l) bin indexes,
 * formats (e), dimension-heatmap cells (d: row × 20 + column) and images per class (i, summed over the
 * distinct class sets). Undecoded images have no dimensions.
 */
function imagePass(em: EntityManager, datasetId: string, sample: string, ranges: Ranges): Promise<GroupRow[]> {
  // A missing range means no row has a value there (no images, or none decoded): any binning will do.
  const none = { lo: 0, width: 1, bins: 1 };
  const [width, height, bytes, labels] = [ranges.width ?? none, ranges.height ?? none, ranges.bytes ?? none, ranges.labels ?? none];
  const minW = ranges.raw.min_w ?? 0;
  const minH = ranges.raw.min_h ?? 0;
  const spanW = Math.max((ranges.raw.max_w ?? 0) - minW, 1);
  const spanH = Math.max((ranges.raw.max_h ?? 0) - minH, 1);
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
                    case when error is null then least((height - ?::int) * ${GRID} / ?::int, ${GRID - 1}) * ${GRID} + least((width - ?::int) * ${GRID} / ?::int, ${GRID - 1}) end as d,
                    class_ids as ids
             from images where dataset_id = ?${sample} offset 0) s
       group by grouping sets ((w), (h), (b), (e), (l), (d), (ids)))
     select kind, k, e, n from g where kind <> 'x'
     union all
     select 'i', c, null, sum(n)::int from g, unnest(ids) as c where kind = 'x' group by c`,
    [width.lo, width.width, height.lo, height.width, bytes.lo, bytes.width, labels.lo, labels.width, minH, spanH, minW, spanW, datasetId],
  );
}

/**
 * One pass over the annotations: normalized box width (w) and height (h) bins of 0.05, exact point counts
 * (p), box-centre cells (c: row from cy × 20 + column from cx) and annotations per class (k). The small
 * epsilon puts a value stored as real (0.35 → 0.34999999) in the bin its 5-decimal value names.
 */
function annotationPass(em: EntityManager, datasetId: string, sample: string): Promise<GroupRow[]> {
  // least/greatest skip nulls, hence the case: a label without a box stays out of the box groups.
  const bin = (column: string) => `least(greatest(floor(${column}::float8 * ${GRID} + 1e-5), 0), ${GRID - 1})::int`;
  return query<GroupRow>(
    em,
    `select case when grouping(bw) = 0 then 'w' when grouping(bh) = 0 then 'h' when grouping(p) = 0 then 'p' when grouping(c) = 0 then 'c' else 'k' end as kind,
            coalesce(bw, bh, p, c, k) as k, null as e, count(*)::int as n
     from (select case when w is not null then ${bin('w')} end as bw,
                  case when h is not null then ${bin('h')} end as bh,
                  nullif(points, 0) as p,
                  case when cx is not null then ${bin('cy')} * ${GRID} + ${bin('cx')} end as c,
                  class_id as k
           from annotations where dataset_id = ?${sample} offset 0) a
     group by grouping sets ((bw), (bh), (p), (c), (k))`,
    [datasetId],
  );
}

/** Exact per-class counts, for sampled datasets: annotations from the (dataset_id, class_id) index, images from their distinct class sets. */
function classCounts(em: EntityManager, datasetId: string): Promise<GroupRow[]> {
  return query<GroupRow>(
    em,
    `select 'k' as kind, class_id as k, null as e, count(*)::int as n from annotations where dataset_id = ? group by class_id
     union all
     select 'i', c, null, sum(n)::int from (select class_ids, count(*) as n from images where dataset_id = ? group by class_ids offset 0) s, unnest(class_ids) as c group by c`,
    [datasetId, datasetId],
  );
}
