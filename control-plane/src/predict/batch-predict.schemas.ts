import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { AnnotateFields } from './auto-annotate.ts';

const AnnotateBody = z.strictObject({
  ...AnnotateFields,
  operation: z.literal('annotate').optional(),
  includeAnnotated: z.boolean().default(false).meta({ description: 'Also run on images that have labels: predictions are added after their labels, which stay as they are' }),
});

/** Face blurring: accepted in the shape the SDK sends so that the answer can say it is not built (400). */
const BlurBody = z.strictObject({
  operation: z.literal('blur'),
  confidence: z.number().min(0.01).max(1).optional(),
  boxScale: z.number().min(0.5).max(1.5).optional(),
  imageId: ObjectId.optional(),
  preview: z.boolean().optional(),
  previewJobId: ObjectId.optional(),
});

export const BatchPredictBody = z.union([AnnotateBody, BlurBody]);
export type BatchPredictRequest = z.output<typeof BatchPredictBody>;

export const BatchPredictQueued = z.object({ jobId: z.string().meta({ description: 'The run: GET on the same path follows it, DELETE cancels it' }) });

export const BatchDeleteQuery = z.object({
  previewJobId: ObjectId.optional().meta({ description: 'A blur preview to discard (face blurring is not available yet: 404)' }),
});

const Progress = z.object({ processed: z.number(), total: z.number() });

const RunSettings = {
  id: z.string(),
  modelId: z.string().meta({ description: 'The model, as the request named it' }),
  confidence: z.number(),
  iou: z.number(),
  includeAnnotated: z.boolean(),
  boxScale: z.number().meta({ description: 'Face blurring only; 1 for auto-annotation runs' }),
  datasetVersion: z.number().nullable().meta({ description: 'The version saved before labeling (null until saved)' }),
};

const ActiveRun = z.object({
  ...RunSettings,
  stopping: z.boolean().meta({ description: 'A cancel was asked for; the run stops after the image in hand' }),
  progress: Progress,
  startedAt: z.string().meta({ description: 'When the run was queued or started' }),
});

const RunResults = z.object({
  processed: z.number().int().meta({ description: 'Images the model ran on and whose predictions were saved (what is charged)' }),
  annotations: z.number().int().meta({ description: 'Labels added' }),
  classes: z.number().int().meta({ description: 'Distinct dataset classes among the labels added' }),
  total: z.number().int().meta({ description: 'Images the run set out to label' }),
  chargedCents: z.number().int().nullable().meta({ description: 'What the run was charged in cents; null until settled (at its end, or by DELETE) and when it processed no image' }),
});

const FinishedRun = z.object({
  ...RunSettings,
  failed: z.boolean(),
  stopped: z.boolean().meta({ description: 'Cancelled: the images labeled before stay labeled' }),
  error: z.string().nullable(),
  results: RunResults.nullable(),
});

export const BatchStatus = z.object({
  activeJob: ActiveRun.nullable().meta({ description: 'The queued or running run with its progress' }),
  lastRun: FinishedRun.nullable().meta({ description: 'The last finished run, until DELETE dismisses it' }),
});

export const BatchDeleted = z.object({
  action: z.enum(['cancelled', 'dismissed', 'none']),
  jobId: z.string().nullable(),
});
