import { defineEntity } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';

/** A container of models, addressed as /api/projects/{owner}/{slug}. */
export const ProjectSchema = defineEntity({
  name: 'Project',
  tableName: 'projects',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  properties: {},
});
export class Project extends ProjectSchema.class {}
ProjectSchema.setClass(Project);
