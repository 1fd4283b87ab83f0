import { defineEntity, p } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { TASKS } from '../images/labels.ts';
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
    /** The dataset it was trained on, listed by GET /api/datasets/{owner}/{dataset}/models. */
    dataset: () => p.manyToOne(Dataset).nullable().deleteRule('set null'),
    task: p.enum(TASKS).default('detect'),
    status: p.string().length(32).default('pending'),
    epochs: p.integer().nullable(),
    bestEpoch: p.integer().nullable(),
    metrics: p.json<Record<string, number>>().nullable(),
    startedAt: p.datetime().nullable(),
    completedAt: p.datetime().nullable(),
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
