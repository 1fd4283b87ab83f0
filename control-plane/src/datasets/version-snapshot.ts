import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { IMAGES_WITH_LABELS } from './dataset-export.ts';
import type { Task } from '../images/labels.ts';
import type { DatasetVersion } from './dataset-version.entity.ts';
import type { Dataset } from './dataset.entity.ts';

/** The dataset fields a version keeps beside its images (restore brings back task, classes and kptShape; compare shows them all). */
export interface VersionFields {
  name: string;
  description: string;
  task: Task;
  kptShape: [number, number] | null;
  classNames: string[];
}

export const versionFields = (dataset: Dataset): VersionFields => ({
  name: dataset.name,
  description: dataset.description,
  task: dataset.task,
  kptShape: dataset.kptShape ?? null,
  classNames: dataset.classNames,
});

/** The fields a version was saved with (stored as JSON). */
export const fieldsOf = (version: DatasetVersion) => version.fields as unknown as VersionFields;

/**
 * SHA-256 of the dataset's content: task and class names, then every image's hash, split, name, labels
 * and metadata, sorted so that neither image ids nor insertion order count (a restored dataset has the
 * fingerprint of its version). Each image is one JSON array (jsonb text is canonical: keys ordered,
 * no whitespace choices), so no field can run into the next. Computed by PostgreSQL, in one pass.
 */
export async function fingerprintOf(em: EntityManager, dataset: Dataset): Promise<string> {
  const prefix = `${JSON.stringify([dataset.task, dataset.classNames])}\n`;
  const [row] = await query<{ fingerprint: string }>(
    em,
    `select encode(sha256(convert_to(? || coalesce(string_agg(e, E'\\n' order by e collate "C"), ''), 'UTF8')), 'hex') as fingerprint
     from (select jsonb_build_array(c.hash, c.split, c.name, c.labels, c.metadata)::text as e from (${IMAGES_WITH_LABELS}) c) entries`,
    [prefix, dataset.id],
  );
  return row.fingerprint;
}

/** Copies the dataset's images, with their labels, into the version's manifest: one INSERT ... SELECT. */
export async function snapshotImages(em: EntityManager, versionId: string, datasetId: string): Promise<void> {
  await query(
    em,
    `insert into dataset_version_images (version_id, position, hash, ext, name, width, height, channels, bytes, split, error, label_count, labels, metadata)
     select ?, (row_number() over (order by c.created_at, c.id) - 1)::int, c.hash, c.ext, c.name, c.width, c.height, c.channels, c.bytes, c.split, c.error,
       c.label_count, c.labels, c.metadata
     from (${IMAGES_WITH_LABELS}) c`,
    [versionId, datasetId],
  );
}
