import { defineEntity, p } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';
import { VISIBILITIES } from '../datasets/dataset.entity.ts';

/** A container of models, addressed as /api/projects/{owner}/{slug}. */
export const ProjectSchema = defineEntity({
  name: 'Project',
  tableName: 'projects',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['workspace', 'slug'] }],
  indexes: [{ properties: ['deletedAt'] }],
  properties: {
    description: p.text().default(''),
    visibility: p.enum(VISIBILITIES).default('private'),
    tags: p.json<string[]>().default('[]'),
    license: p.string().length(64).nullable(),
    metadata: p.json<Record<string, unknown>>().default('{}'),
    archived: p.boolean().default(false),
    iconColor: p.string().length(32).nullable(),
    iconLetter: p.string().length(2).nullable(),
    viewPreferences: p.json<Record<string, unknown>>().default('{}'),
    starCount: p.integer().default(0),
    /** Set while the project is in trash (with its models); its slug stays taken. */
    deletedAt: p.datetime().nullable(),
  },
});
export class Project extends ProjectSchema.class {}
ProjectSchema.setClass(Project);
