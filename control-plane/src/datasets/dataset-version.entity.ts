import { defineEntity, p } from '@mikro-orm/core';
import { BaseSchema } from '../db/base.entity.ts';
import { Dataset } from './dataset.entity.ts';

/**
 * An immutable, numbered snapshot of a dataset (from 1). Its images are listed in dataset_version_images
 * (hash, name, split, labels, metadata): restore and compare read that manifest, and image bytes are
 * shared with the live dataset by hash. `fingerprint` digests the content, so saving an unchanged dataset
 * reuses the version instead of adding one.
 */
export const DatasetVersionSchema = defineEntity({
  name: 'DatasetVersion',
  tableName: 'dataset_versions',
  extends: BaseSchema,
  uniques: [{ properties: ['dataset', 'version'] }],
  indexes: [{ properties: ['dataset', 'fingerprint'] }],
  properties: {
    dataset: () => p.manyToOne(Dataset).deleteRule('cascade'),
    version: p.integer(),
    description: p.text().nullable(),
    fingerprint: p.string().length(64),
    task: p.string().length(16),
    classNames: p.json<string[]>(),
    /** Dataset fields kept with the version (name, description, task, kptShape...), compared between versions. */
    fields: p.json<Record<string, unknown>>().default('{}'),
    imageCount: p.integer(),
    annotationCount: p.integer(),
    /** The version's NDJSON in the blob store, written once. */
    ndjsonKey: p.string().length(1024).nullable(),
    ndjsonBytes: p.bigint('number').nullable(),
  },
});
export class DatasetVersion extends DatasetVersionSchema.class {}
DatasetVersionSchema.setClass(DatasetVersion);
