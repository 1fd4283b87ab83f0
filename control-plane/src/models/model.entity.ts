import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';
import { Project } from '../projects/project.entity.ts';

/** A checkpoint in a project, addressed as /api/models/{owner}/{project}/{slug}; its weights file is a stored blob. */
export const ModelSchema = defineEntity({
  name: 'Model',
  tableName: 'models',
  extends: BaseSchema,
  uniques: [{ properties: ['project', 'slug'] }],
  properties: {
    /** The project's workspace, kept here so every query can be scoped without a join. */
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    project: () => p.manyToOne(Project).deleteRule('cascade'),
    slug: p.string().length(128),
    name: p.string().length(128),
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
