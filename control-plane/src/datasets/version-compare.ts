import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { pgArray, query } from '../db/sql.ts';
import { ImageUrls } from '../images/image-urls.ts';
import type { Label } from '../images/labels.ts';
import type { FileUrls } from '../storage/file-urls.ts';
import type { DatasetVersion } from './dataset-version.entity.ts';
import type { Split } from './dataset.entity.ts';
import type { Task } from '../images/labels.ts';
import { fieldsOf, type VersionFields } from './version-snapshot.ts';
import type { CompareImage, VersionCompare } from './version.schemas.ts';

export const COMPARE_PAGE_SIZE = 100;
/** Dataset fields a comparison reports when they differ; class names are reported as classChanges. */
const COMPARED_FIELDS: Array<keyof VersionFields> = ['name', 'description', 'task', 'kptShape'];

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

interface PairRow {
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

/** One page of the differences from base to head, by hash; the summary comes with the first page only. */
export async function compareVersions(em: EntityManager, base: DatasetVersion, head: DatasetVersion, cursor?: string): Promise<z.input<typeof VersionCompare>> {
  const [afterHash, afterN] = cursor ? [cursor.slice(0, cursor.indexOf(':')), Number(cursor.slice(cursor.indexOf(':') + 1))] : ['', 0];
  const rows = await query<PairRow>(
    em,
    `${PAIRS} select hash, n, name, ext, change, base_split, base_labels, head_split, head_labels,
       case when change in ('added', 'removed') then '{}'::text[] else array_remove(array[
         case when base_label_list <> head_label_list then 'labels' end, case when base_metadata <> head_metadata then 'metadata' end,
         case when base_name <> head_name then 'name' end, case when base_error is distinct from head_error then 'error' end], null) end as fields,
       case when change = 'removed' then 0 else ${labelsMissing('head_label_list', "coalesce(base_label_list, '[]'::jsonb)")} end::int as labels_added,
       case when change = 'added' then 0 else ${labelsMissing('base_label_list', "coalesce(head_label_list, '[]'::jsonb)")} end::int as labels_removed
     from pairs
     where change is not null and (hash, n) > (?, ?) order by hash, n limit ${COMPARE_PAGE_SIZE + 1}`,
    [base.id, afterHash, head.id, afterHash, afterHash, afterN],
  );
  const page = rows.slice(0, COMPARE_PAGE_SIZE);
  const last = page[page.length - 1];
  return {
    ...(cursor ? {} : { summary: await summary(em, base, head) }),
    items: page.map((row) => ({
      hash: row.hash,
      name: row.name,
      ext: row.ext,
      change: row.change,
      fields: row.fields,
      labelsAdded: row.labels_added,
      labelsRemoved: row.labels_removed,
      ...(row.base_split ? { base: { split: row.base_split, labelCount: row.base_labels ?? 0 } } : {}),
      ...(row.head_split ? { head: { split: row.head_split, labelCount: row.head_labels ?? 0 } } : {}),
    })),
    ...(rows.length > COMPARE_PAGE_SIZE ? { nextCursor: `${last.hash}:${last.n}` } : {}),
  };
}

async function summary(em: EntityManager, base: DatasetVersion, head: DatasetVersion) {
  const [counts] = await query<Record<'added' | 'removed' | 'modified' | 'moved' | 'labels_added' | 'labels_removed', number>>(
    em,
    `${PAIRS} select count(*) filter (where change = 'added')::int as added, count(*) filter (where change = 'removed')::int as removed,
       count(*) filter (where change = 'modified')::int as modified, count(*) filter (where change = 'moved')::int as moved,
       coalesce(sum(case when change = 'removed' or base_label_list = head_label_list then 0 else ${labelsMissing('head_label_list', 'base_label_list')} end), 0)::int as labels_added,
       coalesce(sum(case when change = 'added' or base_label_list = head_label_list then 0 else ${labelsMissing('base_label_list', 'head_label_list')} end), 0)::int as labels_removed
     from pairs where change is not null`,
    [base.id, '', head.id, ''],
  );
  const [before, after] = [fieldsOf(base), fieldsOf(head)];
  const classChanges = { added: head.classNames.filter((name) => !base.classNames.includes(name)), removed: base.classNames.filter((name) => !head.classNames.includes(name)) };
  const fields = Object.fromEntries(COMPARED_FIELDS.filter((key) => !isDeepStrictEqual(before[key], after[key])).map((key) => [key, { base: before[key], head: after[key] }]));
  return {
    added: counts.added,
    removed: counts.removed,
    modified: counts.modified,
    moved: counts.moved,
    labelsAdded: counts.labels_added,
    labelsRemoved: counts.labels_removed,
    header: {
      classChanges: classChanges,
      classesAdded: classChanges.added,
      classesRemoved: classChanges.removed,
      // A rename is a class at the same index under another name, both names present in one version only.
      classesRenamed: base.classNames.flatMap((from, index) => {
        const to = head.classNames[index];
        return to !== undefined && to !== from && !head.classNames.includes(from) && !base.classNames.includes(to) ? [{ from, to }] : [];
      }),
      fields,
      changed: Object.keys(fields),
    },
  };
}

/** One image (by hash) as each of the versions keeps it, with a signed URL of its bytes. */
export async function imageInVersions(em: EntityManager, urls: FileUrls, workspaceId: string, versions: DatasetVersion[], hash: string): Promise<z.input<typeof CompareImage>> {
  const rows = await query<{ version_id: string; split: Split; labels: Label[]; label_count: number; ext: string; name: string; width: number; height: number; metadata: Record<string, unknown>; error: string | null }>(
    em,
    `select version_id, split, labels, label_count, ext, name, width, height, metadata, error from dataset_version_images
      where version_id = any(?::text[]) and hash = ? order by split, name, position`,
    [pgArray(versions.map((version) => version.id)), hash],
  );
  const imageUrls = new ImageUrls(urls);
  return {
    versions: await Promise.all(
      versions.map(async (version) => {
        const copies = rows.filter((row) => row.version_id === version.id);
        if (copies.length === 0) return null;
        const kptShape = fieldsOf(version).kptShape;
        return {
          version: version.version,
          task: version.task as Task,
          ...(kptShape ? { kptShape } : {}),
          classNames: version.classNames,
          images: await Promise.all(
            copies.map(async (row) => {
              const ref = { workspaceId, hash, ext: row.ext, name: row.name, error: row.error };
              const thumbnailUrl = await imageUrls.thumbnail(ref);
              return {
                split: row.split,
                name: row.name,
                ext: row.ext,
                width: row.width,
                height: row.height,
                labels: row.labels,
                labelCount: row.label_count,
                metadata: row.metadata,
                imageUrl: await imageUrls.image(ref),
                ...(thumbnailUrl ? { thumbnailUrl } : {}),
              };
            }),
          ),
        };
      }),
    ),
  };
}
