import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/** A container of models, addressed as /api/projects/{owner}/{slug}. */
export const ProjectSchema = defineEntity({
  name: 'Project',
  tableName: 'projects',
  extends: BaseSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    slug: p.string().length(128),
    name: p.string().length(128),
  },
});
export class Project extends ProjectSchema.class {}
ProjectSchema.setClass(Project);
