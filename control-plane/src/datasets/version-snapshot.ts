import type { EntityManager } from '@mikro-orm/postgresql';
import { contentFingerprint } from '../images/image.store.ts';
import { snapshotVersionImages } from './dataset-version.store.ts';
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
  return contentFingerprint(em, prefix, dataset.id);
}

/** Copies the dataset's images, with their labels, into the version's manifest: one INSERT ... SELECT. */
export async function snapshotImages(em: EntityManager, versionId: string, datasetId: string): Promise<void> {
  await snapshotVersionImages(em, versionId, datasetId);
}
