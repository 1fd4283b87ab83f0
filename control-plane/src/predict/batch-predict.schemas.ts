import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { PREVIEW_IMAGES } from '../faces/batch-blur.ts';
import { AnnotateFields } from './auto-annotate.ts';

const AnnotateBody = z.strictObject({
  ...AnnotateFields,
  operation: z.literal('annotate').optional(),
  includeAnnotated: z.boolean().default(false).meta({
    description:
      'Also run on images that have labels: predictions are added after their labels, which stay as they are',
  }),
});

const BlurBody = z
  .strictObject({
    operation: z.literal('blur'),
    confidence: z.number().min(0.01).max(1).default(0.25).meta({ description: 'Minimum face detector score, 0.01-1' }),
    boxScale: z
      .number()
      .min(0.5)
      .max(1.5)
      .default(1)
      .meta({ description: 'Face boxes scaled around their centres before blurring, 0.5-1.5' }),
    imageId: ObjectId.optional().meta({ description: 'Only this image of the dataset' }),
    preview: z
      .boolean()
      .default(false)
      .meta({
        description: `Blur up to ${PREVIEW_IMAGES} images into previews (GET shows them) without changing the dataset`,
      }),
    previewJobId: ObjectId.optional().meta({
      description:
        'A finished preview (its jobId) to apply, with the same confidence, boxScale and imageId: its images get exactly what it showed',
    }),
  })
  .refine((body) => !(body.preview && body.previewJobId), {
    message: 'preview and previewJobId exclude each other: a preview is applied by a run without preview',
    path: ['previewJobId'],
  });

export const BatchPredictBody = z.union([AnnotateBody, BlurBody]);
export type BatchPredictRequest = z.output<typeof BatchPredictBody>;

export const BatchPredictQueued = z.object({
  jobId: z.string().meta({ description: 'The run: GET on the same path follows it, DELETE cancels it' }),
});

export const BatchDeleteQuery = z.object({
  previewJobId: ObjectId.optional().meta({
    description: 'A face blur preview to discard (its prepared images are deleted; one already applied: 409)',
  }),
});

const Progress = z.object({ processed: z.number(), total: z.number() });

const PreviewImage = z.object({
  imageId: z.string(),
  imageUrl: z.string().meta({ description: 'The image as the preview blurred it (as it is where no face was found)' }),
  thumbnailUrl: z.string().optional(),
  faces: z.number().int().meta({ description: 'Faces found in it' }),
});

const RunSettings = {
  id: z.string(),
  operation: z.literal('blur').optional().meta({ description: 'blur for a face blur run; absent for auto-annotation' }),
  preview: z.boolean().optional().meta({ description: 'Face blur only: a preview, which changes no image' }),
  modelId: z.string().optional().meta({ description: 'Auto-annotation only: the model, as the request named it' }),
  confidence: z.number(),
  iou: z.number().optional().meta({ description: 'Auto-annotation only' }),
  includeAnnotated: z.boolean().optional().meta({ description: 'Auto-annotation only' }),
  boxScale: z.number().meta({ description: 'Face blurring only; 1 for auto-annotation runs' }),
  imageId: z.string().optional().meta({ description: 'Face blur only: the one image it takes' }),
  datasetVersion: z
    .number()
    .nullable()
    .meta({ description: 'The version saved before labeling (null until saved; face blur saves none)' }),
};

const ActiveRun = z.object({
  ...RunSettings,
  stopping: z.boolean().meta({ description: 'A cancel was asked for; the run stops after the image in hand' }),
  previews: z
    .array(PreviewImage)
    .optional()
    .meta({ description: 'A face blur preview: the images it has blurred so far' }),
  progress: Progress,
  startedAt: z.string().meta({ description: 'When the run was queued or started' }),
});

const RunResults = z.object({
  processed: z.number().int().meta({
    description:
      'Images the model ran on and whose predictions were saved (what is charged); face blur: images checked for faces',
  }),
  faces: z.number().int().optional().meta({ description: 'Face blur only: faces found' }),
  previews: z
    .array(PreviewImage)
    .optional()
    .meta({ description: 'A face blur preview: each image it blurred, until applied or discarded' }),
  annotations: z.number().int().meta({ description: 'Labels added (0 for face blur)' }),
  classes: z.number().int().meta({ description: 'Distinct dataset classes among the labels added' }),
  total: z.number().int().meta({ description: 'Images the run set out to process' }),
  chargedCents: z.number().int().nullable().meta({
    description:
      'What the run was charged in cents; null until settled (at its end, or by DELETE), when it processed no image, and for face blur (free)',
  }),
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
