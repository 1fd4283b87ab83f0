import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { OwnerPath, Region, Task, Timestamp } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { int, queryInt } from '../validation/integers.ts';

/** Statuses a model record can be given; 'training' blocks moving it between projects. */
export const MODEL_STATUSES = ['pending', 'training', 'completed', 'failed', 'cancelled'] as const;

const Status = z.enum(MODEL_STATUSES, { error: `must be one of ${MODEL_STATUSES.join(', ')}` });
const Metrics = z.record(z.string(), z.number()).meta({ description: 'Metric name to value: mAP50, mAP50-95, precision, recall' });
const JsonObject = z.record(z.string(), z.unknown());
const Name = z.string().trim().min(1).max(100);

export const ModelPath = OwnerPath.extend({ project: Slug, model: Slug });

export const Weights = z.object({ name: z.string(), size: z.number().int() }).nullable().meta({ description: 'The weights file, null until uploaded' });

/** A model as listed in its project. */
export const ModelSummary = z.object({
  id: ObjectId,
  model: Slug,
  name: z.string(),
  task: Task,
  status: z.string(),
  metrics: Metrics.nullable(),
  epochs: z.number().int().nullable(),
  bestEpoch: z.number().int().nullable(),
  weights: Weights,
  trainArgs: JsonObject.nullable(),
  createdAt: Timestamp,
  completedAt: Timestamp.nullable(),
  updatedAt: Timestamp,
});

export const ModelListQuery = limitQuery(20, 100);
export const ModelList = z.object({ models: z.array(ModelSummary.extend({ owner: Handle, project: Slug })), total: z.number().int(), region: Region });

export const ModelDetail = ModelSummary.extend({
  owner: Handle,
  project: Slug,
  description: z.string(),
  metadata: JsonObject,
  trainResults: JsonObject.nullable(),
  classNames: z.array(z.string()).nullable(),
  computeCost: JsonObject.nullable(),
  bestFitness: z.number().nullable(),
  version: z.string().nullable(),
  color: z.string().nullable(),
  license: z.string().nullable(),
  datasetSlug: z.string().nullable(),
  trainingError: z.string().nullable(),
  starCount: z.number().int(),
  starred: z.boolean().meta({ description: "Whether the key's user starred it" }),
  startedAt: Timestamp.nullable(),
});

export const ModelReadQuery = z.object({
  analysis: queryInt().optional().meta({ description: '1 returns the per-image validation analysis instead of the model' }),
});
export const ModelRead = z.union([
  z.object({ model: ModelDetail, isOwner: z.boolean().meta({ description: 'The key belongs to the owning workspace' }) }),
  z.object({ analysis: z.array(JsonObject).meta({ description: 'Per-image validation rows recorded by training; empty when none' }) }),
]);

export const ModelCreate = z
  .object({
    project: Slug.meta({ description: "URL name of a project in the key's workspace" }),
    owner: Handle.optional().meta({ description: "Must be the key's own workspace (the default)" }),
    model: Slug.optional().meta({ description: 'URL name; a random readable one when omitted' }),
    name: Name.optional().meta({ description: 'Only with model; default: the URL name' }),
    description: z.string().max(1000).optional(),
    task: Task.default('detect'),
    metadata: MetadataObject.optional(),
    trainArgs: JsonObject.optional(),
    metrics: Metrics.optional(),
    epochs: int().min(0).optional(),
    version: z.string().max(50).optional(),
  })
  .refine((body) => body.name === undefined || body.model !== undefined, { path: ['name'], message: 'send name together with model' });
export const ModelCreated = z.object({ id: ObjectId, owner: Handle, project: Slug, model: Slug, region: Region });

export const ModelPatch = z
  .object({
    name: Name,
    description: z.string().max(1000),
    color: z.string().max(32).nullable(),
    metadata: MetadataObject.meta({ description: 'Replaces the metadata object; {} clears it' }),
    status: Status,
    license: z.string().max(64).nullable(),
    datasetSlug: Slug.nullable(),
    trainArgs: JsonObject.nullable(),
    trainResults: JsonObject.nullable(),
    epochs: int().min(0).nullable(),
    bestEpoch: int().min(0).nullable(),
    bestFitness: z.number().nullable(),
    version: z.string().max(50).nullable(),
    trainingError: z.string().max(10_000).nullable(),
    starred: z.boolean().meta({ description: "Stars or unstars for the key's user; needs only read access" }),
    projectId: ObjectId.meta({ description: 'Sent alone: moves the model to this project of the same owner (409 while training)' }),
  })
  .partial()
  .strict();
export const ModelPatched = z.object({
  success: z.literal(true),
  model: Slug.meta({ description: 'The current URL name' }),
  projectId: ObjectId.optional().meta({ description: 'After a move: the project it is in now' }),
  renamed: z.boolean().optional().meta({ description: 'After a move: true when the URL name was taken there and a numbered one was given' }),
});
export const ModelDeleted = z.object({ success: z.literal(true), model: Slug, deletedAt: Timestamp, daysRemaining: z.number().int() });

export const ModelFiles = z.object({
  files: z.array(z.object({ name: z.string(), size: z.number().int(), downloadUrl: z.string().meta({ description: 'Signed, valid for 15 minutes' }) })),
});

export const ModelClone = z.object({
  project: Slug.meta({ description: "URL name of an existing project in the key's workspace" }),
  owner: Handle.optional().meta({ description: "Must be the key's own workspace (the default)" }),
  model: Slug.optional().meta({ description: 'Default: the source URL name, else <model>-copy, -copy-2… while taken in the project' }),
  name: Name.optional(),
  description: z.string().max(1000).optional(),
});

