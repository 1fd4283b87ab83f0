// The dataset_versions and dataset_version_images tables: a dataset's numbered versions and each one's manifest (its
// images with their labels, sharing the bytes of the dataset's images by hash). Versions are immutable once saved;
// only their description and the export file written for them change. Every function takes the EntityManager
// first, so it runs inside the caller's transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { IMAGES_WITH_LABELS } from '../images/image.store.ts';
import type { Label } from '../images/labels.ts';
import type { Split } from './dataset.entity.ts';

/** A saved version as the dataset read lists it, with its split counts (bigint counts come as text). */
export interface SavedVersionRow {
  version: number;
  description: string | null;
  class_count: number;
  image_count: number;
  annotation_count: number;
  created_at: Date;
  train: string;
  val: string;
  test: string;
  labeled: string;
}

/** The dataset's saved versions, oldest first. */
export function savedVersionRows(em: EntityManager, datasetId: string): Promise<SavedVersionRow[]> {
  return query<SavedVersionRow>(
    em,
    `select v.version, v.description, jsonb_array_length(v.class_names) as class_count, v.image_count, v.annotation_count, v.created_at,
            count(*) filter (where vi.split = 'train') as train, count(*) filter (where vi.split = 'val') as val,
            count(*) filter (where vi.split = 'test') as test, count(*) filter (where vi.label_count > 0) as labeled
       from dataset_versions v left join dataset_version_images vi on vi.version_id = v.id
      where v.dataset_id = ? group by v.id order by v.version`,
    [datasetId],
  );
}

/** The number the dataset's next version takes (call under the dataset lock). */
export async function nextVersionNumber(em: EntityManager, datasetId: string): Promise<number> {
  const [{ next }] = await query<{ next: number }>(
    em,
    'select coalesce(max(version), 0) + 1 as next from dataset_versions where dataset_id = ?',
    [datasetId],
  );
  return next;
}

/** Records the NDJSON file written for the version. */
export async function setVersionExportFile(
  em: EntityManager,
  versionId: string,
  key: string,
  bytes: number,
): Promise<void> {
  await query(em, 'update dataset_versions set ndjson_key = ?, ndjson_bytes = ? where id = ?', [key, bytes, versionId]);
}

/** Whether a saved version of the dataset keeps the file (hash). */
export async function isFileInVersions(em: EntityManager, datasetId: string, hash: string): Promise<boolean> {
  const [retained] = await query<{ retained: boolean }>(
    em,
    'select exists (select 1 from dataset_version_images vi join dataset_versions v on v.id = vi.version_id where v.dataset_id = ? and vi.hash = ?) as retained',
    [datasetId, hash],
  );
  return retained!.retained;
}

/** Copies the dataset's images, with their labels, into the version's manifest: one INSERT ... SELECT. */
export async function snapshotVersionImages(em: EntityManager, versionId: string, datasetId: string): Promise<void> {
  await query(
    em,
    `insert into dataset_version_images (version_id, position, hash, ext, name, width, height, channels, bytes, split, error, label_count, labels, metadata)
     select ?, (row_number() over (order by c.created_at, c.id) - 1)::int, c.hash, c.ext, c.name, c.width, c.height, c.channels, c.bytes, c.split, c.error,
       c.label_count, c.labels, c.metadata
     from (${IMAGES_WITH_LABELS}) c`,
    [versionId, datasetId],
  );
}

/**
 * Up to `limit` images of the version's manifest after position `afterPosition`, in position order; an image still
 * indexed in place with the same file (hash) comes with its id and reference key.
 */
export function versionImagesAfter<T>(
  em: EntityManager,
  versionId: string,
  afterPosition: number,
  limit: number,
): Promise<T[]> {
  return query<T>(
    em,
    `select vi.position, vi.hash, vi.ext, vi.name, vi.width, vi.height, vi.channels, vi.bytes, vi.split, vi.error, vi.labels, vi.metadata, r.id, r.reference_key
       from dataset_version_images vi join dataset_versions v on v.id = vi.version_id
       left join lateral (select i.id, i.reference_key from images i where i.dataset_id = v.dataset_id and i.hash = vi.hash and i.reference_key is not null limit 1) r on true
       where vi.version_id = ? and vi.position > ? order by vi.position limit ${limit}`,
    [versionId, afterPosition],
  );
}

/** The copies of a file (hash) that the versions keep, by split, name and position. */
export function versionCopiesOfFile(
  em: EntityManager,
  versionIds: string[],
  hash: string,
): Promise<
  Array<{
    version_id: string;
    split: Split;
    labels: Label[];
    label_count: number;
    ext: string;
    name: string;
    width: number;
    height: number;
    metadata: Record<string, unknown>;
    error: string | null;
  }>
> {
  return query(
    em,
    `select version_id, split, labels, label_count, ext, name, width, height, metadata, error from dataset_version_images
      where version_id = any(?::text[]) and hash = ? order by split, name, position`,
    [pgArray(versionIds), hash],
  );
}

// Comparing two manifests.

/**
 * The two manifests side by side: images are matched by hash (the n-th copy of a hash with the n-th,
 * when a version holds the same file twice), and each pair is classified. Only pairs with hash >= the
 * given one are read, so a page starts where the cursor points. Parameters: base id, from, head id, from.
 */
const PAIRS = `
  with b as (select *, row_number() over (partition by hash order by split, name, position) as n from dataset_version_images where version_id = ? and hash >= ?),
  h as (select *, row_number() over (partition by hash order by split, name, position) as n from dataset_version_images where version_id = ? and hash >= ?),
  pairs as (
    select coalesce(b.hash, h.hash) as hash, coalesce(b.n, h.n) as n, coalesce(h.name, b.name) as name, coalesce(h.ext, b.ext) as ext,
      b.name as base_name, h.name as head_name, b.metadata as base_metadata, h.metadata as head_metadata, b.error as base_error, h.error as head_error,
      case when b.hash is null then 'added' when h.hash is null then 'removed' when b.split <> h.split then 'moved'
           when b.labels <> h.labels or b.metadata <> h.metadata then 'modified' end as change,
      b.split as base_split, b.label_count as base_labels, b.labels as base_label_list,
      h.split as head_split, h.label_count as head_labels, h.labels as head_label_list
    from b full join h on h.hash = b.hash and h.n = b.n)`;

/** Labels in `from` that are not in `to`, counted as multisets (a label is its class and geometry). */
const labelsMissing = (from: string, to: string) =>
  `coalesce((select count(*) from (select value from jsonb_array_elements(${from}) except all select value from jsonb_array_elements(${to})) d), 0)`;

/** One difference between two manifests. */
export interface VersionPairRow {
  hash: string;
  n: string;
  name: string;
  ext: string;
  fields: Array<'labels' | 'metadata' | 'name' | 'error'>;
  labels_added: number;
  labels_removed: number;
  change: 'added' | 'removed' | 'modified' | 'moved';
  base_split: Split | null;
  base_labels: number | null;
  head_split: Split | null;
  head_labels: number | null;
}

/** Up to `limit` differences from base to head after (hash, n), by hash and n. */
export function versionDifferencesAfter(
  em: EntityManager,
  baseId: string,
  headId: string,
  afterHash: string,
  afterN: number,
  limit: number,
): Promise<VersionPairRow[]> {
  return query<VersionPairRow>(
    em,
    `${PAIRS} select hash, n, name, ext, change, base_split, base_labels, head_split, head_labels,
       case when change in ('added', 'removed') then '{}'::text[] else array_remove(array[
         case when base_label_list <> head_label_list then 'labels' end, case when base_metadata <> head_metadata then 'metadata' end,
         case when base_name <> head_name then 'name' end, case when base_error is distinct from head_error then 'error' end], null) end as fields,
       case when change = 'removed' then 0 else ${labelsMissing('head_label_list', "coalesce(base_label_list, '[]'::jsonb)")} end::int as labels_added,
       case when change = 'added' then 0 else ${labelsMissing('base_label_list', "coalesce(head_label_list, '[]'::jsonb)")} end::int as labels_removed
     from pairs
     where change is not null and (hash, n) > (?, ?) order by hash, n limit ${limit}`,
    [baseId, afterHash, headId, afterHash, afterHash, afterN],
  );
}

/** How many images were added, removed, modified and moved from base to head, and how many labels added and removed. */
export async function versionDifferenceCounts(
  em: EntityManager,
  baseId: string,
  headId: string,
): Promise<Record<'added' | 'removed' | 'modified' | 'moved' | 'labels_added' | 'labels_removed', number>> {
  const [counts] = await query<
    Record<'added' | 'removed' | 'modified' | 'moved' | 'labels_added' | 'labels_removed', number>
  >(
    em,
    `${PAIRS} select count(*) filter (where change = 'added')::int as added, count(*) filter (where change = 'removed')::int as removed,
       count(*) filter (where change = 'modified')::int as modified, count(*) filter (where change = 'moved')::int as moved,
       coalesce(sum(case when change = 'removed' or base_label_list = head_label_list then 0 else ${labelsMissing('head_label_list', 'base_label_list')} end), 0)::int as labels_added,
       coalesce(sum(case when change = 'added' or base_label_list = head_label_list then 0 else ${labelsMissing('base_label_list', 'head_label_list')} end), 0)::int as labels_removed
     from pairs where change is not null`,
    [baseId, '', headId, ''],
  );
  return counts;
}
