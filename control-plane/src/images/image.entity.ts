import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';
import { Dataset, SPLITS } from '../datasets/dataset.entity.ts';

/**
 * One image of a dataset. Its bytes live in the blob store under the workspace and the hash, so copies
 * of the same file share them. labelCount and classIds mirror the image's annotations (written together)
 * so list filters and sorts never join the annotations table.
 */
export const ImageSchema = defineEntity({
  name: 'Image',
  tableName: 'images',
  extends: BaseSchema,
  indexes: [
    // One index per sort order; each ends with id, the tie-breaker that makes cursors exact.
    { properties: ['dataset', 'createdAt', 'id'] },
    { properties: ['dataset', 'name', 'id'] },
    { properties: ['dataset', 'width', 'id'] },
    { properties: ['dataset', 'height', 'id'] },
    { properties: ['dataset', 'bytes', 'id'] },
    { properties: ['dataset', 'labelCount', 'id'] },
    { properties: ['dataset', 'split', 'createdAt', 'id'] },
    { properties: ['dataset', 'hash'] },
    { properties: ['workspace', 'hash'] },
    // Filtered totals (split, labeled, classes) count from this index alone, without visiting the table.
    {
      name: 'images_counting',
      expression:
        'create index "images_counting" on "images" ("dataset_id", "split", "label_count") include ("class_ids")',
    },
    {
      name: 'images_class_ids_gin',
      expression: 'create index "images_class_ids_gin" on "images" using gin ("class_ids")',
    },
    {
      name: 'images_search_trgm',
      expression: 'create index "images_search_trgm" on "images" using gin ("search_text" gin_trgm_ops)',
    },
  ],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    dataset: () => p.manyToOne(Dataset).deleteRule('cascade'),
    /** Hex SHA-256 of the bytes. */
    hash: p.string().length(64),
    ext: p.string().length(16),
    name: p.string().length(256),
    width: p.integer().default(0),
    height: p.integer().default(0),
    channels: p.integer().default(3),
    split: p.enum(SPLITS).default('train'),
    labelCount: p.integer().default(0),
    classIds: p
      .array<number>((value) => Number(value))
      .columnType('int[]')
      .defaultRaw(`'{}'`),
    bytes: p.bigint('number'),
    error: p.text().nullable(),
    metadata: p.json<Record<string, unknown>>().default('{}'),
    /** Lower-cased file name and metadata text, matched by the search filter (trigram index). */
    searchText: p.text().default(''),
    /** In a connected dataset: the object (key beneath the dataset's reference) the bytes are read from, and its version when indexed. */
    referenceKey: p.string().length(1100).nullable(),
    referenceVersion: p.string().length(300).nullable(),
    /** Checked by the face detector, and blurred where it found faces: set in datasets with blurFaces. */
    facesBlurred: p.boolean().default(false),
  },
});
export class Image extends ImageSchema.class {}
ImageSchema.setClass(Image);
