import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/** A labeled image collection, addressed as /api/datasets/{owner}/{slug}. */
export const DatasetSchema = defineEntity({
  name: 'Dataset',
  tableName: 'datasets',
  extends: BaseSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    slug: p.string().length(128),
    name: p.string().length(128),
  },
});
export class Dataset extends DatasetSchema.class {}
DatasetSchema.setClass(Dataset);
