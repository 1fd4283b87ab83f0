import { z } from 'zod';

export const TRAINING_EVENTS = [
  'training_started',
  'training_progress',
  'epoch_end',
  'system_metrics',
  'console_output',
  'checkpoint_saved',
  'training_complete',
  'training_failed',
] as const;
export type TrainingEvent = (typeof TRAINING_EVENTS)[number];

const Json = z.record(z.string(), z.unknown());
/** The ultralytics client sends null for identity fields it does not know yet. */
const optionalText = (max: number) => z.string().max(max).nullish();

export const MetricsEnvelope = z.object({
  event: z.enum(TRAINING_EVENTS),
  data: Json.default({}).meta({
    description: 'The event payload as the ultralytics package sends it (non-finite numbers arrive as null)',
  }),
  modelId: optionalText(24).meta({ description: 'The model, once training_started has answered' }),
  project: optionalText(300).meta({ description: '"owner/project" (before modelId is known)' }),
  name: optionalText(300).meta({ description: 'The model URL name (before modelId is known); default "train"' }),
});

export const MetricsAnswer = z.object({
  received: z.literal(true),
  event: z.enum(TRAINING_EVENTS).meta({ description: 'The event received' }),
  mode: z
    .enum(['cloud', 'remote'])
    .meta({ description: 'cloud: a training job of this appliance (its job key); remote: a run on your own machine' }),
  modelId: z.string(),
  runId: z.number().int().meta({ description: 'This training run; sent back with checkpoint uploads' }),
  modelSlug: z
    .string()
    .optional()
    .meta({ description: 'training_started: the model URL name, made unique when it was taken' }),
  modelUrl: z.string().optional(),
  cancelled: z.boolean().meta({ description: 'true once a user cancelled: the trainer stops after the current epoch' }),
});

export const CheckpointUploadRequest = z.object({
  filename: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[^/\\]+$/, 'must be a file name without a path'),
  modelId: optionalText(24),
  project: optionalText(300),
  name: optionalText(300),
  runId: z.number().int().nullish(),
  size: z.number().nullish(),
});
export const CheckpointUploadAnswer = z.object({
  uploadUrl: z.string().meta({
    description:
      'PUT the checkpoint here (Content-Type: application/octet-stream, Content-Length required); no auth header',
  }),
  gcsPath: z.string().meta({
    description:
      'Opaque: send it back as modelPath in checkpoint_saved (and training_complete) to make it the model weights',
  }),
  uploadPath: z.string(),
  modelId: z.string().meta({ description: 'The model the checkpoint is for' }),
  expiresAt: z.iso.datetime(),
});

export const ReferencePath = {
  dataset: z.object({ owner: z.string(), dataset: z.string() }),
  model: z.object({ owner: z.string(), project: z.string(), model: z.string() }),
};
export const NoBody = z.unknown();
