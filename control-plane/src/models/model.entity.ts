import { defineEntity, p } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';
import { Project } from '../projects/project.entity.ts';

/** A checkpoint in a project, addressed as /api/models/{owner}/{project}/{slug}; its weights file is a stored blob. */
export const ModelSchema = defineEntity({
  name: 'Model',
  tableName: 'models',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['project', 'slug'] }],
  properties: {
    // workspace (from NamedResource) is the project's, kept here so every query can be scoped without a join.
    project: () => p.manyToOne(Project).deleteRule('cascade'),
    fileKey: p.string().length(1024).nullable(),
    fileBytes: p.bigint('number').nullable(),
    fileContentType: p.string().length(255).nullable(),
    /** Hex MD5 of the weights, computed by the store while they streamed in. */
    fileMd5: p.string().length(32).nullable(),
    /** What the uploader said the checksum was: kept as metadata, not verified. */
    fileChecksum: p.string().length(128).nullable(),
  },
});
export class Model extends ModelSchema.class {}
ModelSchema.setClass(Model);
