import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { ImageUrls } from '../images/image-urls.ts';
import type { FileUrls } from '../storage/file-urls.ts';
import type { DatasetVersion } from './dataset-version.entity.ts';
import { versionCopiesOfFile, versionDifferenceCounts, versionDifferencesAfter } from './dataset-version.store.ts';
import type { Task } from '../images/labels.ts';
import { fieldsOf, type VersionFields } from './version-snapshot.ts';
import type { CompareImage, VersionCompare } from './version.schemas.ts';

export const COMPARE_PAGE_SIZE = 100;
/** Dataset fields a comparison reports when they differ; class names are reported as classChanges. */
const COMPARED_FIELDS: Array<keyof VersionFields> = ['name', 'description', 'task', 'kptShape'];

/** One page of the differences from base to head, by hash; the summary comes with the first page only. */
export async function compareVersions(
  em: EntityManager,
  base: DatasetVersion,
  head: DatasetVersion,
  cursor?: string,
): Promise<z.input<typeof VersionCompare>> {
  const [afterHash, afterN] = cursor
    ? [cursor.slice(0, cursor.indexOf(':')), Number(cursor.slice(cursor.indexOf(':') + 1))]
    : ['', 0];
  const rows = await versionDifferencesAfter(em, base.id, head.id, afterHash, afterN, COMPARE_PAGE_SIZE + 1);
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
  const counts = await versionDifferenceCounts(em, base.id, head.id);
  const [before, after] = [fieldsOf(base), fieldsOf(head)];
  const classChanges = {
    added: head.classNames.filter((name) => !base.classNames.includes(name)),
    removed: base.classNames.filter((name) => !head.classNames.includes(name)),
  };
  const fields = Object.fromEntries(
    COMPARED_FIELDS.filter((key) => !isDeepStrictEqual(before[key], after[key])).map((key) => [
      key,
      { base: before[key], head: after[key] },
    ]),
  );
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
        return to !== undefined && to !== from && !head.classNames.includes(from) && !base.classNames.includes(to)
          ? [{ from, to }]
          : [];
      }),
      fields,
      changed: Object.keys(fields),
    },
  };
}

/** One image (by hash) as each of the versions keeps it, with a signed URL of its bytes. */
export async function imageInVersions(
  em: EntityManager,
  urls: FileUrls,
  workspaceId: string,
  versions: DatasetVersion[],
  hash: string,
): Promise<z.input<typeof CompareImage>> {
  const rows = await versionCopiesOfFile(
    em,
    versions.map((version) => version.id),
    hash,
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
