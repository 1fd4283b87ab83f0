import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

export const STORED_OBJECT_KINDS = ['datasetImages', 'datasetArchives', 'modelFiles', 'exports'] as const;

/** One blob in the store, with its size, so storage use is summed from records rather than listed from disk. */
export const StoredObjectSchema = defineEntity({
  name: 'StoredObject',
  tableName: 'stored_objects',
  extends: BaseSchema,
  indexes: [{ properties: ['workspace', 'kind'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    kind: p.enum(STORED_OBJECT_KINDS),
    key: p.string().length(1024).unique(),
    bytes: p.bigint('number'),
  },
});
export class StoredObject extends StoredObjectSchema.class {}
StoredObjectSchema.setClass(StoredObject);
