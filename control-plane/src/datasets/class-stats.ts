import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { query } from '../db/sql.ts';
import type { ClassStats } from './class-stats.schemas.ts';
import type { Dataset } from './dataset.entity.ts';

/** Above this many images, image and annotation statistics come from a deterministic sample of about this many. */
export const SAMPLE_ABOVE = 200_000;
/** Cells per side of both heatmaps, and bins of the bbox width/height histograms. */
const GRID = 20;
/** Bins a data-range histogram aims at; nice widths give between 10 and 22. */
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

function grid(cells: Array<{ x: number; y: number; n: number }>): { bins: number[][]; maxCount: number } {
  const bins = Array.from({ length: GRID }, () => new Array<number>(GRID).fill(0));
  let maxCount = 0;
  for (const { x, y, n } of cells) {
    bins[y][x] += n;
    maxCount = Math.max(maxCount, bins[y][x]);
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

/** One row per non-empty group of a grouping-sets pass: which histogram (`kind`), its key(s) and the count. */
interface GroupRow {
  kind: string;
  k: number | null;
  k2: number | null;
  e: string | null;
  n: number;
}

/**
 * Class and image statistics of a dataset. Served from `datasets.stats_cache` while the dataset's revision
 * has not moved; otherwise computed in SQL (one grouping-sets pass over the images, one over the
 * annotations, one grouped count per class, plus index lookups for the value ranges) and cached under the
 * revision read first, unless a write moved it meanwhile. The passes run on separate connections outside
 * a transaction, so numbers taken while a write lands may mix both states; such a result is not cached.
 */
export async function classStats(em: EntityManager, dataset: Dataset): Promise<Result> {
  const [row] = await query<DatasetRow>(
    em,
    'select revision, image_count, class_names, case when stats_revision = revision then stats_cache end as cache from datasets where id = ?',
    [dataset.id],
  );
  if (!row) throw new Error(`dataset ${dataset.id} not found`);
  if (row.cache) return { ...row.cache, cached: true };

  const sampled = row.image_count > SAMPLE_ABOVE;
  const threshold = Math.ceil((HASH_RANGE * SAMPLE_ABOVE) / Math.max(row.image_count, 1));
  // The same images on both tables: annotations are sampled by their image's id.
  const imageSample = sampled ? ` and (hashtext(id) & ${HASH_RANGE - 1}) < ${threshold}` : '';
  const annotationSample = sampled ? ` and (hashtext(image_id) & ${HASH_RANGE - 1}) < ${threshold}` : '';

  const [imageGroups, annotationGroups, classRows] = await Promise.all([
    imageRanges(em, dataset.id, imageSample).then(async (ranges) => ({ ranges, groups: await imagePass(em, dataset.id, imageSample, ranges) })),
    annotationPass(em, dataset.id, annotationSample),
    query<{ kind: string; class_id: number; n: number }>(
      em,
      `select 'a' as kind, class_id, count(*)::int as n from annotations where dataset_id = ? group by class_id
       union all
       select 'i', c, count(*)::int from images, unnest(class_ids) as c where dataset_id = ? group by c`,
      [dataset.id, dataset.id],
    ),
  ]);

  const classNames = row.class_names;
  const classes = classNames.map((_, classId) => ({ classId, count: 0, imageCount: 0 }));
  for (const { kind, class_id, n } of classRows) {
    const entry = classes[class_id];
    if (!entry) continue;
    if (kind === 'a') entry.count = n;
    else entry.imageCount = n;
  }

  const { ranges, groups } = imageGroups;
  const keyed = (rows: GroupRow[], kind: string) => new Map(rows.filter((r) => r.kind === kind && r.k !== null).map((r) => [r.k as number, r.n]));
  const formatDistribution: Record<string, number> = {};
  let sampleSize = 0;
  for (const group of groups.filter((r) => r.kind === 'e').sort((a, b) => b.n - a.n || String(a.e).localeCompare(String(b.e)))) {
    formatDistribution[group.e ?? ''] = group.n;
    sampleSize += group.n;
  }
  const dimensionCells = groups.filter((r) => r.kind === 'd' && r.k !== null && r.k2 !== null).map((r) => ({ x: r.k as number, y: r.k2 as number, n: r.n }));

  const pointCounts = keyed(annotationGroups, 'p');
  const pointValues = [...pointCounts.keys()];
  const points = pointValues.length ? niceBinning(Math.min(...pointValues), Math.max(...pointValues)) : null;
  const pointBins = new Map<number, number>();
  for (const [value, n] of pointCounts) {
    const bin = points ? Math.floor((value - points.lo) / points.width) : 0;
    pointBins.set(bin, (pointBins.get(bin) ?? 0) + n);
  }

  const result: Result = {
    classes,
    imageStats: {
      widthHistogram: histogram(ranges.width, keyed(groups, 'w')),
      heightHistogram: histogram(ranges.height, keyed(groups, 'h')),
      pointsHistogram: histogram(points, pointBins),
      fileSizeHistogram: histogram(ranges.bytes, keyed(groups, 'b')),
      objectsPerImageHistogram: histogram(ranges.labels, keyed(groups, 'l')),
      bboxWidthHistogram: unitHistogram(keyed(annotationGroups, 'w')),
      bboxHeightHistogram: unitHistogram(keyed(annotationGroups, 'h')),
      formatDistribution,
    },
    locationHeatmap: grid(annotationGroups.filter((r) => r.kind === 'c' && r.k !== null && r.k2 !== null).map((r) => ({ x: r.k as number, y: r.k2 as number, n: r.n }))),
    dimensionHeatmap: {
      ...grid(dimensionCells),
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

/**
 * One pass over the images: width (w), height (h), file size (b) and objects-per-image (l) bin indexes,
 * formats (e) and dimension-heatmap cells (d: k = column, k2 = row). Undecoded images have no dimensions.
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
    `select case when grouping(w) = 0 then 'w' when grouping(h) = 0 then 'h' when grouping(b) = 0 then 'b'
                 when grouping(e) = 0 then 'e' when grouping(l) = 0 then 'l' else 'd' end as kind,
            coalesce(w, h, b, l, dx) as k, dy as k2, e, count(*)::int as n
     from (select case when error is null then (width - ?::int) / ?::int end as w,
                  case when error is null then (height - ?::int) / ?::int end as h,
                  ((bytes - ?::bigint) / ?::bigint)::int as b,
                  ext as e,
                  (label_count - ?::int) / ?::int as l,
                  case when error is null then least((width - ?::int) * ${GRID} / ?::int, ${GRID - 1}) end as dx,
                  case when error is null then least((height - ?::int) * ${GRID} / ?::int, ${GRID - 1}) end as dy
           from images where dataset_id = ?${sample}) s
     group by grouping sets ((w), (h), (b), (e), (l), (dx, dy))`,
    [width.lo, width.width, height.lo, height.width, bytes.lo, bytes.width, labels.lo, labels.width, minW, spanW, minH, spanH, datasetId],
  );
}

/**
 * One pass over the annotations: normalized box width (w) and height (h) bins of 0.05, exact point counts
 * (p, binned afterwards: few distinct values) and box-centre cells (c: k = column from cx, k2 = row from cy).
 * The small epsilon puts a value stored as real (0.35 → 0.34999999) in the bin its 5-decimal value names.
 */
function annotationPass(em: EntityManager, datasetId: string, sample: string): Promise<GroupRow[]> {
  // least/greatest skip nulls, hence the case: a label without a box stays out of the box groups.
  const cell = (column: string) => `case when ${column} is not null then least(greatest(floor(${column}::float8 * ${GRID} + 1e-5), 0), ${GRID - 1})::int end`;
  return query<GroupRow>(
    em,
    `select case when grouping(bw) = 0 then 'w' when grouping(bh) = 0 then 'h' when grouping(p) = 0 then 'p' else 'c' end as kind,
            coalesce(bw, bh, p, cx) as k, cy as k2, null as e, count(*)::int as n
     from (select ${cell('w')} as bw, ${cell('h')} as bh, nullif(points, 0) as p, ${cell('cx')} as cx, ${cell('cy')} as cy
           from annotations where dataset_id = ?${sample}) a
     group by grouping sets ((bw), (bh), (p), (cx, cy))`,
    [datasetId],
  );
}
