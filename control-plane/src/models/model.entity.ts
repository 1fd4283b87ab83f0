import { defineEntity, p } from '@mikro-orm/core';
import { NamedResourceSchema } from '../db/named-resource.entity.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { TASKS } from '../images/labels.ts';
import { Project } from '../projects/project.entity.ts';

export interface TrainResultRow {
  epoch?: number;
  metrics?: Record<string, number>;
  fitness?: number;
  timestamp?: string;
}

export interface ValidationExtremes {
  population?: number | null;
  extremes?: { worst?: unknown[]; best?: unknown[] } | null;
}

/** A checkpoint in a project, addressed as /api/models/{owner}/{project}/{slug}; its weights file is a stored blob. */
export const ModelSchema = defineEntity({
  name: 'Model',
  tableName: 'models',
  extends: NamedResourceSchema,
  uniques: [{ properties: ['project', 'slug'] }],
  indexes: [{ properties: ['deletedAt'] }, { properties: ['fileKey'] }],
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
    description: p.text().default(''),
    metadata: p.json<Record<string, unknown>>().default('{}'),
    trainArgs: p.json<Record<string, unknown>>().nullable(),
    /** Every epoch of the last completed training ({ epoch, metrics, fitness, timestamp }), in order. */
    trainResults: p.json<TrainResultRow[]>().nullable(),
    /** Validation plots the last training reported. */
    plots: p.json<unknown[]>().nullable(),
    classNames: p.json<string[]>().nullable(),
    computeCost: p.json<Record<string, unknown>>().nullable(),
    bestFitness: p.double().nullable(),
    version: p.string().length(50).nullable(),
    color: p.string().length(32).nullable(),
    license: p.string().length(64).nullable(),
    /** The training dataset's URL name as the trainer reported it (the dataset relation may be gone). */
    datasetSlug: p.string().length(128).nullable(),
    trainingError: p.text().nullable(),
    /** Per-image validation rows recorded by training (GET ...?analysis=1). */
    analysis: p.json<Array<Record<string, unknown>>>().nullable().lazy(),
    /** With the analysis: how many images were scored, and the worst and best ones as [hash, tp, fp, fn]. */
    validationExtremes: p.json<ValidationExtremes>().nullable().lazy(),
    starCount: p.integer().default(0),
    /** Set while the model is in trash. */
    deletedAt: p.datetime().nullable(),
    /** In trash because its project was: restoring the project restores it. */
    trashedWithProject: p.boolean().default(false),
    /** Shared by clones (weights are shared by content): deleted only when no model refers to it. */
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
