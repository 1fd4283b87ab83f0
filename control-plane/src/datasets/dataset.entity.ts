import { defineEntity } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';

/** A labeled image collection, addressed as /api/datasets/{owner}/{slug}. */
export const DatasetSchema = defineEntity({
  name: 'Dataset',
  tableName: 'datasets',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  properties: {},
});
export class Dataset extends DatasetSchema.class {}
DatasetSchema.setClass(Dataset);
