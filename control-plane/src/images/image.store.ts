// The images table: a dataset's image rows (file facts, split, label counts, metadata, where read in place). The
// image's labels are the annotations table (image-labels.ts); statements that write both at once (a copy) live here.
// Every function takes the EntityManager first, so it runs inside the caller's transaction (and dataset lock).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { CountDelta } from '../datasets/dataset-counters.ts';
import type { Split } from '../datasets/dataset.entity.ts';
import { NEW_ID_SQL } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';

/** An image row as the counters see it, with its file. */
export interface CountedImageRow {
  id: string;
  split: Split;
  label_count: number;
  error: string | null;
  hash: string;
  ext: string;
}

/** An image row as the face blurs read it. */
export interface StoredImageRow {
  id: string;
  hash: string;
  ext: string;
  name: string;
  bytes: string | number;
  error: string | null;
  reference_key: string | null;
}

/** The columns of a StoredImageRow, for a select on images. */
export const STORED_IMAGE_COLUMNS = 'id, hash, ext, name, bytes, error, reference_key';

// Reads of single images and selections.

/** The image's counted row, or undefined when it is gone. */
export async function findCountedImage(em: EntityManager, imageId: string): Promise<CountedImageRow | undefined> {
  const [row] = await query<CountedImageRow>(
    em,
    'select id, split, label_count, error, hash, ext from images where id = ?',
    [imageId],
  );
  return row;
}

/** The selected images of the dataset, as the counters see them. */
export function countedImagesOf(em: EntityManager, datasetId: string, imageIds: string[]): Promise<CountedImageRow[]> {
  return query<CountedImageRow>(
    em,
    'select id, split, label_count, error, hash, ext from images where dataset_id = ? and id = any(?::text[])',
    [datasetId, pgArray(imageIds)],
  );
}

/** Images of the dataset in `split` with one of the files (hashes), other than the excluded ones. */
export function copiesInSplit(
  em: EntityManager,
  datasetId: string,
  split: Split,
  hashes: string[],
  excludedIds: string[],
): Promise<CountedImageRow[]> {
  return query<CountedImageRow>(
    em,
    'select id, split, label_count, error, hash, ext from images where dataset_id = ? and split = ? and hash = any(?::text[]) and id <> all(?::text[])',
    [datasetId, split, pgArray(hashes), pgArray(excludedIds)],
  );
}

/** How many of the images each dataset holds (unknown ids count nowhere). */
export function countImagesByDataset(
  em: EntityManager,
  imageIds: string[],
): Promise<Array<{ dataset_id: string; n: number }>> {
  return query<{ dataset_id: string; n: number }>(
    em,
    'select dataset_id, count(*)::int as n from images where id = any(?::text[]) group by dataset_id',
    [pgArray(imageIds)],
  );
}

/** A selected image with its dataset's workspace, as an adoption reads it. */
export interface SelectedImageRow {
  id: string;
  dataset_id: string;
  workspaceId: string;
  hash: string;
  ext: string;
  split: Split;
  class_ids: number[];
  referenceKey: string | null;
}

/** The selected images with their dataset's workspace (any order). */
export function imagesWithWorkspace(em: EntityManager, imageIds: string[]): Promise<SelectedImageRow[]> {
  return query<SelectedImageRow>(
    em,
    `select i.id, i.dataset_id, d.workspace_id as "workspaceId", i.hash, i.ext, i.split, i.class_ids, i.reference_key as "referenceKey"
     from images i join datasets d on d.id = i.dataset_id where i.id = any(?::text[])`,
    [pgArray(imageIds)],
  );
}

/** The splits the dataset holds each of the files (hashes) in. */
export function splitsOfFiles(
  em: EntityManager,
  datasetId: string,
  hashes: string[],
): Promise<Array<{ hash: string; split: Split }>> {
  return query<{ hash: string; split: Split }>(
    em,
    'select hash, split from images where dataset_id = ? and hash = any(?::text[])',
    [datasetId, pgArray(hashes)],
  );
}

/** The dataset's images with one of the files (hashes). */
export function imagesWithFiles(
  em: EntityManager,
  datasetId: string,
  hashes: string[],
): Promise<Array<CountedImageRow>> {
  return query<CountedImageRow>(
    em,
    'select id, hash, split, label_count, error, ext from images where dataset_id = ? and hash = any(?::text[])',
    [datasetId, pgArray(hashes)],
  );
}

/** The distinct files of a dataset's images, under the workspace they are stored in. */
export function distinctFilesOf(
  em: EntityManager,
  workspaceId: string,
  datasetId: string,
): Promise<Array<{ workspaceId: string; hash: string; ext: string }>> {
  return query<{ workspaceId: string; hash: string; ext: string }>(
    em,
    'select distinct ?::text as "workspaceId", hash, ext from images where dataset_id = ?',
    [workspaceId, datasetId],
  );
}

/** The newest `perDataset` images of each dataset, in one query. */
export function newestImagesOf(
  em: EntityManager,
  datasetIds: string[],
  perDataset: number,
): Promise<
  Array<{
    dataset_id: string;
    id: string;
    hash: string;
    ext: string;
    name: string;
    width: number;
    height: number;
    error: string | null;
    reference_key: string | null;
  }>
> {
  return query(
    em,
    `select d.id as dataset_id, s.* from unnest(?::text[]) as d(id)
     cross join lateral (select id, hash, ext, name, width, height, error, reference_key from images where dataset_id = d.id order by created_at desc, id desc limit ${perDataset}) s`,
    [pgArray(datasetIds)],
  );
}

/**
 * A dataset's images with their labels in position order, in the dataset's oldest-first order: what an
 * export writes and a version keeps. One placeholder, the dataset id; callers add conditions after it.
 */
export const IMAGES_WITH_LABELS = `
  select i.id, i.created_at, i.hash, i.ext, i.name, i.width, i.height, i.channels, i.bytes, i.split, i.error, i.label_count, i.metadata, i.reference_key,
    coalesce(l.labels, '[]'::jsonb) as labels
  from images i left join lateral (select jsonb_agg(a.label order by a.position) as labels from annotations a where a.image_id = i.id) l on true
  where i.dataset_id = ?`;

/** Up to `limit` of the dataset's images with their labels (IMAGES_WITH_LABELS) after the image `afterId`, oldest first. */
export function imagesWithLabelsAfter<T>(
  em: EntityManager,
  datasetId: string,
  afterId: string | undefined,
  limit: number,
): Promise<T[]> {
  return query<T>(
    em,
    `${IMAGES_WITH_LABELS} ${afterId ? 'and (i.created_at, i.id) > (select created_at, id from images where id = ?)' : ''}
       order by i.created_at, i.id limit ${limit}`,
    afterId ? [datasetId, afterId] : [datasetId],
  );
}

/**
 * SHA-256 of `prefix` then the dataset's images with their labels (IMAGES_WITH_LABELS): each image's hash, split, name,
 * labels and metadata as one JSON array, the arrays sorted and joined by newlines.
 */
export async function contentFingerprint(em: EntityManager, prefix: string, datasetId: string): Promise<string> {
  const [row] = await query<{ fingerprint: string }>(
    em,
    `select encode(sha256(convert_to(? || coalesce(string_agg(e, E'\\n' order by e collate "C"), ''), 'UTF8')), 'hex') as fingerprint
     from (select jsonb_build_array(c.hash, c.split, c.name, c.labels, c.metadata)::text as e from (${IMAGES_WITH_LABELS}) c) entries`,
    [prefix, datasetId],
  );
  return row.fingerprint;
}

// Writes.

/** A new image row, as insertImageRows writes it. */
export interface NewImageRow {
  id: string;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  channels: number;
  split: Split;
  bytes: number;
  error: string | null;
  metadata: Record<string, unknown>;
  searchText: string;
  labelCount: number;
  classIds: number[];
  facesBlurred: boolean;
  referenceKey: string | null;
  referenceVersion: string | null;
}

/** Image rows per INSERT: 20 parameters each, well under PostgreSQL's parameter limit. */
const ROWS_PER_INSERT = 500;

/** Inserts the image rows into the dataset, ROWS_PER_INSERT per statement. */
export async function insertImageRows(
  em: EntityManager,
  workspaceId: string,
  datasetId: string,
  rows: NewImageRow[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const chunk = rows.slice(start, start + ROWS_PER_INSERT);
    await query(
      em,
      `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, channels, split, bytes, error, metadata, search_text, label_count, class_ids, faces_blurred, reference_key, reference_version)
       values ${chunk.map(() => '(?, clock_timestamp(), clock_timestamp(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?::int[], ?, ?, ?)').join(', ')}`,
      chunk.flatMap((row) => [
        row.id,
        workspaceId,
        datasetId,
        row.hash,
        row.ext,
        row.name,
        row.width,
        row.height,
        row.channels,
        row.split,
        row.bytes,
        row.error,
        JSON.stringify(row.metadata),
        row.searchText,
        row.labelCount,
        pgArray(row.classIds),
        row.facesBlurred,
        row.referenceKey,
        row.referenceVersion,
      ]),
    );
  }
}

/**
 * Copies image rows (those of a dataset, or by id) and their labels into the target dataset in one statement. Labels
 * of classes in the map (parallel arrays: source dataset, class there, class in the target) are kept with the mapped
 * class; the others are dropped. Returns what the copies add to the counters.
 */
export async function copyImageRows(
  em: EntityManager,
  source: { datasetId: string } | { imageIds: string[] },
  classMap: { datasetIds: string[]; from: number[]; to: number[] },
  target: { workspaceId: string; datasetId: string; split: Split | null },
): Promise<CountDelta> {
  const [selection, selected] =
    'datasetId' in source
      ? ['i.dataset_id = ?', source.datasetId]
      : ['i.id = any(?::text[])', pgArray(source.imageIds)];
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
      pgArray(classMap.datasetIds),
      pgArray(classMap.from),
      pgArray(classMap.to),
      target.workspaceId,
      target.datasetId,
      target.split,
      target.datasetId,
    ],
  );
  return delta;
}

/** Sets the image's metadata and search text; returns when it was updated, or undefined when the image is gone. */
export async function updateImageMetadata(
  em: EntityManager,
  imageId: string,
  metadata: Record<string, unknown> | undefined,
  searchText: string,
): Promise<{ updated_at: Date } | undefined> {
  const [updated] = await query<{ updated_at: Date }>(
    em,
    'update images set metadata = ?::jsonb, search_text = ?, updated_at = clock_timestamp() where id = ? returning updated_at',
    [JSON.stringify(metadata), searchText, imageId],
  );
  return updated;
}

/** Sets the labelCount and classIds (parallel arrays; classIds as int array literals) the images' labels now have. */
export async function setLabelSummaries(
  em: EntityManager,
  imageIds: string[],
  labelCounts: number[],
  classIdLiterals: string[],
): Promise<void> {
  await query(
    em,
    `update images i set label_count = v.n, class_ids = v.ids::int[], updated_at = clock_timestamp()
     from (select unnest(?::text[]) as id, unnest(?::int[]) as n, unnest(?::text[]) as ids) v where i.id = v.id`,
    [pgArray(imageIds), pgArray(labelCounts), pgArray(classIdLiterals)],
  );
}

/** Recomputes labelCount and classIds from the labels, for the dataset's images that had a class `lowestClass` or above. */
export async function refreshLabelSummariesFrom(
  em: EntityManager,
  datasetId: string,
  lowestClass: number,
): Promise<void> {
  await query(
    em,
    `update images i set class_ids = coalesce(l.class_ids, '{}'), label_count = coalesce(l.n, 0), updated_at = clock_timestamp()
       from images t left join lateral (select array_agg(distinct a.class_id order by a.class_id) as class_ids, count(*)::int as n from annotations a where a.image_id = t.id) l on true
       where t.id = i.id and t.dataset_id = ? and exists (select 1 from unnest(t.class_ids) c where c >= ?)`,
    [datasetId, lowestClass],
  );
}

/** Moves the images to the split. */
export async function moveImagesToSplit(em: EntityManager, imageIds: string[], split: Split): Promise<void> {
  await query(em, 'update images set split = ?, updated_at = clock_timestamp() where id = any(?::text[])', [
    split,
    pgArray(imageIds),
  ]);
}

/**
 * Shuffles every image of the dataset into train/val/test: the first `trainPercent` go to train, up to
 * `trainValPercent` to val, the rest to test. Writes only the images whose split changes; returns how many it wrote.
 */
export async function shuffleImageSplits(
  em: EntityManager,
  datasetId: string,
  trainPercent: number,
  trainValPercent: number,
): Promise<number> {
  const moved = await query(
    em,
    `with ranked as (select id, split, row_number() over (order by random()) as rank, count(*) over () as total from images where dataset_id = ?),
              target as (select id, split, case when rank <= round(total * ?::numeric / 100) then 'train' when rank <= round(total * ?::numeric / 100) then 'val' else 'test' end as next from ranked)
         update images i set split = t.next, updated_at = clock_timestamp() from target t where i.id = t.id and t.split <> t.next returning 1`,
    [datasetId, trainPercent, trainValPercent],
  );
  return moved.length;
}

/** Deletes the images (their annotations cascade). */
export async function deleteImages(em: EntityManager, imageIds: string[]): Promise<void> {
  await query(em, 'delete from images where id = any(?::text[])', [pgArray(imageIds)]);
}

/** Deletes the dataset's selected images (annotations cascade); returns the deleted rows. */
export function deleteDatasetImages(
  em: EntityManager,
  datasetId: string,
  imageIds: string[],
): Promise<CountedImageRow[]> {
  return query<CountedImageRow>(
    em,
    'delete from images where dataset_id = ? and id = any(?::text[]) returning id, split, label_count, error, hash, ext',
    [datasetId, pgArray(imageIds)],
  );
}

/** Deletes the images (of any datasets); returns what each deleted row counted, by dataset. */
export function deleteImagesOfDatasets(
  em: EntityManager,
  imageIds: string[],
): Promise<Array<{ dataset_id: string; split: Split; label_count: number; error: string | null }>> {
  return query<{ dataset_id: string; split: Split; label_count: number; error: string | null }>(
    em,
    'delete from images where id = any(?::text[]) returning dataset_id, split, label_count, error',
    [pgArray(imageIds)],
  );
}

/** Deletes every image of the dataset; returns the distinct files of the deleted rows that the version does not keep. */
export function deleteAllImagesNotInVersion(
  em: EntityManager,
  datasetId: string,
  versionId: string,
): Promise<Array<{ hash: string; ext: string }>> {
  return query<{ hash: string; ext: string }>(
    em,
    `with gone as (delete from images where dataset_id = ? returning hash, ext)
     select distinct hash, ext from gone g where not exists (select 1 from dataset_version_images v where v.version_id = ? and v.hash = g.hash)`,
    [datasetId, versionId],
  );
}

/**
 * The files (hashes) nothing in the workspace refers to any more: no image row, no saved dataset version (restoring one
 * needs the bytes) and no ingest that has them staged.
 */
export async function unusedHashes(em: EntityManager, workspaceId: string, hashes: string[]): Promise<string[]> {
  const rows = await query<{ hash: string }>(
    em,
    `select h as hash from unnest(?::text[]) h
     where not exists (select 1 from images where workspace_id = ? and hash = h)
       and not exists (select 1 from dataset_version_images vi join dataset_versions v on v.id = vi.version_id join datasets d on d.id = v.dataset_id
                       where d.workspace_id = ? and vi.hash = h)
       and not exists (select 1 from ingest_staged_images s join jobs j on j.id = s.job_id where j.workspace_id = ? and s.hash = h)`,
    [pgArray(hashes), workspaceId, workspaceId, workspaceId],
  );
  return rows.map((row) => row.hash);
}

// Face blurs.

/** Points the image at the file unless its row changed since it was read (its hash); returns whether it did. */
export async function pointImageAtFile(
  em: EntityManager,
  image: { id: string; hash: string },
  file: { hash: string; ext: string; bytes: number; channels: number },
  markChecked: boolean,
): Promise<boolean> {
  const rows = await query<{ id: string }>(
    em,
    'update images set hash = ?, ext = ?, bytes = ?, channels = ?, faces_blurred = faces_blurred or ?, updated_at = clock_timestamp() where id = ? and hash = ? returning id',
    [file.hash, file.ext, file.bytes, file.channels, markChecked, image.id, image.hash],
  );
  return rows.length > 0;
}

/** The image as the blurs read it, when it is (still) in the dataset. */
export async function findStoredImage(
  em: EntityManager,
  imageId: string,
  datasetId: string,
): Promise<StoredImageRow | undefined> {
  const [row] = await query<StoredImageRow>(
    em,
    `select ${STORED_IMAGE_COLUMNS} from images where id = ? and dataset_id = ?`,
    [imageId, datasetId],
  );
  return row;
}

/** How many images a blur run takes: stored (not read in place), decodable; only `imageId` when given. */
export async function countBlurTargets(em: EntityManager, datasetId: string, imageId: string | null): Promise<number> {
  const [row] = await query<{ n: number }>(
    em,
    'select count(*)::int as n from images where dataset_id = ? and error is null and reference_key is null and (?::text is null or id = ?)',
    [datasetId, imageId, imageId],
  );
  return row.n;
}

/** The images a blur run takes (see countBlurTargets), in id order after `afterId`, at most `limit`. */
export function blurTargetsAfter(
  em: EntityManager,
  datasetId: string,
  imageId: string | null,
  afterId: string,
  limit: number,
): Promise<StoredImageRow[]> {
  return query<StoredImageRow>(
    em,
    `select ${STORED_IMAGE_COLUMNS} from images where dataset_id = ? and error is null and reference_key is null
  and (?::text is null or id = ?) and id > ? order by id limit ?`,
    [datasetId, imageId, imageId, afterId, limit],
  );
}

/** How many of the dataset's images blurFaces has not checked yet. */
export async function countUncheckedForFaces(em: EntityManager, datasetId: string): Promise<number> {
  const [{ count }] = await query<{ count: string }>(
    em,
    'select count(*) from images where dataset_id = ? and not faces_blurred',
    [datasetId],
  );
  return Number(count);
}

/** The dataset's images blurFaces has not checked yet, in id order after `afterId`, at most `limit`. */
export function uncheckedForFacesAfter(
  em: EntityManager,
  datasetId: string,
  afterId: string,
  limit: number,
): Promise<StoredImageRow[]> {
  return query<StoredImageRow>(
    em,
    `select ${STORED_IMAGE_COLUMNS} from images where dataset_id = ? and not faces_blurred and id > ? order by id limit ?`,
    [datasetId, afterId, limit],
  );
}

// --- Auto-annotation (predict/batch-predict): its targets are decoded images, and, unless includeAnnotated, unlabeled ones. ---

/** An image an auto-annotation run labels, as SQL returns it. */
export interface AnnotateTargetRow {
  id: string;
  hash: string;
  ext: string;
  channels: number;
  split: Split;
  label_count: number;
  error: string | null;
  referenceKey: string | null;
}

/** How many images an auto-annotation run would label. */
export async function countAnnotateTargets(
  em: EntityManager,
  datasetId: string,
  includeAnnotated: boolean,
): Promise<number> {
  const [{ n }] = await query<{ n: number }>(
    em,
    'select count(*)::int as n from images where dataset_id = ? and error is null and (? or label_count = 0)',
    [datasetId, includeAnnotated],
  );
  return n;
}

/** The first `limit` targets the model can take (at most 3 channels), in id order: the ones probed before admission. */
export function firstAnnotateTargets(
  em: EntityManager,
  datasetId: string,
  includeAnnotated: boolean,
  limit: number,
): Promise<Array<{ id: string; hash: string; ext: string; channels: number; referenceKey: string | null }>> {
  return query<{ id: string; hash: string; ext: string; channels: number; referenceKey: string | null }>(
    em,
    'select id, hash, ext, channels, reference_key as "referenceKey" from images where dataset_id = ? and error is null and (? or label_count = 0) and channels <= 3 order by id limit ?',
    [datasetId, includeAnnotated, limit],
  );
}

/** The targets after `after` (their id) in id order, at most `limit`. */
export function annotateTargetsAfter(
  em: EntityManager,
  datasetId: string,
  includeAnnotated: boolean,
  after: string,
  limit: number,
): Promise<AnnotateTargetRow[]> {
  return query<AnnotateTargetRow>(
    em,
    `select id, hash, ext, channels, split, label_count, error, reference_key as "referenceKey" from images
       where dataset_id = ? and error is null and (? or label_count = 0) and id > ? order by id limit ?`,
    [datasetId, includeAnnotated, after, limit],
  );
}

/** How many targets are left after `after` (their id). */
export async function countAnnotateTargetsAfter(
  em: EntityManager,
  datasetId: string,
  includeAnnotated: boolean,
  after: string,
): Promise<number> {
  const [row] = await query<{ n: number }>(
    em,
    'select count(*)::int as n from images where dataset_id = ? and error is null and (? or label_count = 0) and id > ?',
    [datasetId, includeAnnotated, after],
  );
  return row.n;
}

/** The image of the dataset as its labels are saved (under the dataset's lock): its split, label count and error. */
export async function imageToLabel(
  em: EntityManager,
  imageId: string,
  datasetId: string,
): Promise<Pick<AnnotateTargetRow, 'id' | 'split' | 'label_count' | 'error'> | undefined> {
  const [row] = await query<Pick<AnnotateTargetRow, 'id' | 'split' | 'label_count' | 'error'>>(
    em,
    'select id, split, label_count, error from images where id = ? and dataset_id = ?',
    [imageId, datasetId],
  );
  return row;
}

/** The image's error and where it is read in place, when it is the dataset's. */
export async function imageErrorAndReference(
  em: EntityManager,
  imageId: string,
  datasetId: string,
): Promise<{ error: string | null; referenceKey: string | null } | undefined> {
  const [image] = await query<{ error: string | null; referenceKey: string | null }>(
    em,
    'select error, reference_key as "referenceKey" from images where id = ? and dataset_id = ?',
    [imageId, datasetId],
  );
  return image;
}
