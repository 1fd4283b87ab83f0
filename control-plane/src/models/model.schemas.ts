import { z } from 'zod';
import { Handle, Slug } from '../account/handle.ts';
import { OwnerPath, Region, Task, Timestamp, Visibility } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { MetadataObject } from '../validation/metadata.ts';
import { StarChange } from '../validation/star-change.ts';
import { int, queryInt } from '../validation/integers.ts';

/** Model statuses as clients read and set them. The record keeps `training` for starting and running (a model in training cannot move). */
export const MODEL_STATUSES = [
  'pending',
  'untrained',
  'starting',
  'running',
  'completed',
  'failed',
  'cancelled',
] as const;

const Status = z.enum(MODEL_STATUSES, { error: `must be one of ${MODEL_STATUSES.join(', ')}` });
const Metrics = z
  .record(z.string(), z.number())
  .meta({ description: 'Metric name to value: mAP50, mAP50-95, precision, recall' });
const JsonObject = z.record(z.string(), z.unknown());
const Name = z.string().trim().min(1).max(100);

export const ModelPath = OwnerPath.extend({ project: Slug, model: Slug });

export const Weights = z
  .object({ name: z.string(), size: z.number().int() })
  .nullable()
  .meta({ description: 'The weights file, null until uploaded' });

export const TrainResult = z
  .object({
    epoch: z.number().int(),
    metrics: Metrics,
    fitness: z.number().optional(),
    timestamp: Timestamp.optional(),
  })
  .partial()
  .meta({ description: 'One epoch of the training: 0-based epoch, its metrics and fitness, when it ended' });

export const TrainingError = z.object({
  message: z.string(),
  code: z.string().optional(),
  timestamp: Timestamp.meta({ description: 'When the training ended (else when the model last changed)' }),
});

/**
 * The fields every model view shares (a project read lists these). Optional fields are absent, not null,
 * until they have a value, as the ultralytics clients read them.
 */
export const ModelEntry = z.object({
  id: ObjectId,
  model: Slug,
  name: z.string(),
  task: Task,
  status: Status.meta({ description: 'running while a training is queued, starting or running' }),
  color: z.string().optional(),
  metrics: Metrics.optional(),
  epochs: z.number().int().optional().meta({ description: 'Epochs the training was set to run' }),
  bestEpoch: z.number().int().optional(),
  bestFitness: z.number().optional(),
  weights: Weights,
  hasWeights: z.boolean(),
  file: z
    .object({ size: z.number().int() })
    .optional()
    .meta({ description: 'The weights file (bytes), once uploaded' }),
  trainArgs: JsonObject.optional(),
  startedAt: Timestamp.optional(),
  completedAt: Timestamp.optional(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

/** A model as its project's model list shows it: without plots (read the model for those). */
export const ModelListItem = ModelEntry.extend({
  owner: Handle,
  project: Slug,
  projectName: z.string(),
  visibility: Visibility.meta({ description: "The project's: a model is as visible as its project" }),
  description: z.string(),
  license: z.string().optional(),
  version: z.string().optional(),
  datasetSlug: z.string().nullable(),
  datasetId: ObjectId.optional(),
  trainResults: z
    .array(TrainResult)
    .optional()
    .meta({ description: 'Every epoch of the last completed training, in order' }),
  classNames: z.array(z.string()).optional(),
  trainingError: TrainingError.optional().meta({ description: 'Why the last training failed; absent otherwise' }),
  computeCost: JsonObject.optional(),
  starCount: z.number().int(),
  isStarred: z.boolean().meta({ description: "Whether the key's user starred it" }),
  starred: z.boolean().meta({ description: 'Same as isStarred' }),
});

export const ModelListQuery = limitQuery(20, 100);
export const ModelList = z.object({ models: z.array(ModelListItem), total: z.number().int(), region: Region });

export const ModelDetail = ModelListItem.extend({
  metadata: JsonObject,
  plots: z
    .array(z.unknown())
    .optional()
    .meta({ description: 'Validation plots the last training reported (PR and F1 curves, confusion matrix)' }),
  dataset: z
    .object({ owner: Handle, dataset: Slug })
    .optional()
    .meta({ description: 'The dataset it was trained on, while it exists' }),
});

export const ModelReadQuery = z.object({
  analysis: queryInt()
    .optional()
    .meta({ description: '1 returns the per-image validation analysis instead of the model' }),
});

const Stats = z.object({
  count: z.number().int(),
  min: z.number(),
  p25: z.number(),
  median: z.number(),
  p75: z.number(),
  max: z.number(),
  mean: z.number(),
});
const Example = z.object({
  hash: z.string().meta({ description: 'The image hash' }),
  tp: z.number().int(),
  fp: z.number().int(),
  fn: z.number().int(),
  f1: z.number(),
  isEmptyGroundTruth: z.boolean(),
});
const Cohort = z.object({
  count: z.number().int(),
  matched: z.number().int(),
  metrics: z.object({ tp: z.number().int(), fp: z.number().int(), fn: z.number().int(), f1: Stats.nullable() }),
  examples: z.array(Example),
});
export const ModelAnalysis = z
  .object({
    population: z.number().int().meta({ description: 'Validation images the trainer scored' }),
    retained: z.number().int().meta({ description: 'Rows it sent (an F1-ranked sample of at most 5,000)' }),
    matched: z.number().int(),
    unmatched: z.number().int(),
    traitsAvailable: z
      .boolean()
      .meta({ description: 'false: image traits (size, instance counts) are not compared here' }),
    sourceSplit: z.enum(['train', 'val']).nullable(),
    coverage: z.object({
      mode: z.enum(['full', 'sampled', 'tails', 'partial', 'unavailable']),
      omittedMiddle: z.number().int(),
      unmatchedExtremes: z.number().int(),
    }),
    scatterSample: z.object({
      eligible: z.number().int(),
      rows: z.array(z.array(z.unknown())).meta({ description: '[hash, tp, fp, fn] per retained image' }),
    }),
    cohorts: z
      .object({ worst: Cohort, best: Cohort })
      .meta({ description: 'The images the model scored worst and best (F1), up to 100 each' }),
    comparisons: z.null().meta({ description: 'Trait comparisons between the cohorts: not computed here (null)' }),
  })
  .nullable()
  .meta({ description: 'null when the training recorded no per-image results' });

export const ModelRead = z.union([
  z.object({
    model: ModelDetail,
    isOwner: z.boolean().meta({ description: 'The key belongs to the owning workspace' }),
  }),
  z.object({ analysis: ModelAnalysis }),
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
  .refine((body) => body.name === undefined || body.model !== undefined, {
    path: ['name'],
    message: 'send name together with model',
  });
export const ModelCreated = z.object({
  id: ObjectId,
  owner: Handle,
  project: Slug,
  model: Slug,
  name: z.string(),
  region: Region,
});

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
    trainResults: z
      .array(TrainResult)
      .max(10_000)
      .nullable()
      .meta({ description: 'Per-epoch results, replacing the recorded ones' }),
    epochs: int().min(0).nullable(),
    bestEpoch: int().min(0).nullable(),
    bestFitness: z.number().nullable(),
    version: z.string().max(50).nullable(),
    trainingError: z
      .union([
        z.string().max(10_000),
        z.object({
          message: z.string().max(10_000),
          code: z.string().max(100).optional(),
          timestamp: Timestamp.optional(),
        }),
      ])
      .nullable()
      .meta({ description: 'The message, alone or as { message }; it is read back as { message, timestamp }' }),
    starred: z.boolean().meta({ description: "Stars or unstars for the key's user; needs only read access" }),
    projectId: ObjectId.meta({
      description: 'Sent alone: moves the model to this project of the same owner (409 while training)',
    }),
  })
  .partial()
  .strict();
export const ModelPatched = z.object({
  success: z.literal(true),
  model: Slug.meta({ description: 'The current URL name' }),
  ...StarChange,
  slug: Slug.optional().meta({ description: 'After a move: the URL name in the project it is in now (same as model)' }),
  name: z.string().optional().meta({ description: 'After a move: its display name' }),
  projectSlug: Slug.optional().meta({ description: 'After a move: the URL name of the project it is in now' }),
  projectId: ObjectId.optional().meta({ description: 'After a move: the project it is in now' }),
  renamed: z
    .boolean()
    .optional()
    .meta({ description: 'After a move: true when the URL name was taken there and a numbered one was given' }),
});
export const ModelDeleted = z.object({
  success: z.literal(true),
  model: Slug,
  deletedAt: Timestamp,
  daysRemaining: z.number().int(),
});

export const ModelFiles = z.object({
  files: z.array(
    z.object({
      name: z.string(),
      size: z.number().int(),
      downloadUrl: z.string().meta({ description: 'Signed, valid for 15 minutes' }),
    }),
  ),
});

export const ModelClone = z.object({
  project: Slug.meta({ description: "URL name of an existing project in the key's workspace" }),
  owner: Handle.optional().meta({ description: "Must be the key's own workspace (the default)" }),
  model: Slug.optional().meta({
    description: 'Default: the source URL name, else <model>-copy, -copy-2… while taken in the project',
  }),
  name: Name.optional(),
  description: z.string().max(1000).optional(),
});
