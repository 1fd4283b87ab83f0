import { defineEntity, p } from '@mikro-orm/core';
import type { Label } from '../images/labels.ts';
import { DatasetVersion } from './dataset-version.entity.ts';

/** One image as a dataset version keeps it: enough to rebuild it (bytes are found by hash) and to compare versions. */
export const DatasetVersionImageSchema = defineEntity({
  name: 'DatasetVersionImage',
  tableName: 'dataset_version_images',
  indexes: [{ properties: ['version', 'hash'] }],
  properties: {
    version: () => p.manyToOne(DatasetVersion).primary().deleteRule('cascade'),
    /** Position in the version, in the dataset's oldest-first order. */
    position: p.integer().primary(),
    hash: p.string().length(64),
    ext: p.string().length(16),
    name: p.string().length(256),
    width: p.integer(),
    height: p.integer(),
    channels: p.integer(),
    bytes: p.bigint('number'),
    split: p.string().length(8),
    error: p.text().nullable(),
    labelCount: p.integer(),
    labels: p.json<Label[]>(),
    metadata: p.json<Record<string, unknown>>(),
  },
});
export class DatasetVersionImage extends DatasetVersionImageSchema.class {}
DatasetVersionImageSchema.setClass(DatasetVersionImage);
