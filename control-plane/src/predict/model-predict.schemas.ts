import { PredictParameters } from '@vp/inference/request';
import { z } from 'zod';

/** The request body as documented (multipart/form-data, or urlencoded with source). */
export const PredictForm = PredictParameters.extend({
  file: z.string().optional().meta({
    format: 'binary',
    description:
      'The image (JPEG, PNG, WebP, BMP, TIFF, …), required unless source is given; at most PREDICT_MAX_BYTES',
  }),
});

const Box = z.object({
  x1: z.number(),
  y1: z.number(),
  x2: z.number(),
  y2: z.number(),
  x3: z.number().optional(),
  y3: z.number().optional(),
  x4: z.number().optional(),
  y4: z.number().optional(),
});

/** One row of ultralytics' Results.summary(). */
const ResultRow = z.object({
  name: z.string(),
  class: z.number().int(),
  confidence: z.number().optional(),
  pixel_ratio: z.number().optional(),
  box: Box.optional().meta({ description: 'Pixels (or 0-1 with normalize); obb: the four corners' }),
  segments: z.object({ x: z.array(z.number()), y: z.array(z.number()) }).optional(),
  keypoints: z
    .object({ x: z.array(z.number()), y: z.array(z.number()), visible: z.array(z.number()).optional() })
    .optional(),
});

const Png = {
  shape: z.array(z.number().int()).meta({ description: '[height, width]' }),
  encoding: z.literal('png'),
  data: z.string().meta({ description: 'Base64 PNG' }),
};

const PredictedImage = z.object({
  shape: z.array(z.number().int()).meta({ description: '[height, width] of the input image' }),
  speed: z
    .object({ preprocess: z.number(), inference: z.number(), postprocess: z.number() })
    .meta({ description: 'Milliseconds' }),
  results: z.array(ResultRow),
  semantic_mask: z
    .object(Png)
    .optional()
    .meta({ description: 'Semantic models: the class index of every pixel, an 8-bit grey PNG' }),
  depth: z
    .object({ ...Png, min: z.number(), max: z.number(), bits: z.union([z.literal(8), z.literal(12), z.literal(16)]) })
    .optional()
    .meta({ description: 'Depth models: depth = pixel × max / divisor (255 for 8 bits, 65535 for 12 or 16)' }),
});

export const PredictResponse = z.object({
  images: z.array(PredictedImage),
  metadata: z.object({
    imageCount: z.number().int(),
    classNames: z.array(z.string()),
    functionTimeAlive: z.number().meta({ description: 'Seconds this server process has been running' }),
    functionTimeCall: z.number().meta({ description: 'Seconds this call took' }),
    model: z.string().meta({ description: 'owner/project/model' }),
    task: z.enum(['detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb']),
    version: z.record(z.string(), z.string()),
  }),
});
