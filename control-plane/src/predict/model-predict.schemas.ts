import { z } from 'zod';

/** Form fields arrive as text (multipart, urlencoded); JSON bodies may carry numbers and booleans as such. */
const FormNumber = <T extends z.ZodType>(rule: T) => z.preprocess((value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value), rule);
const FormBoolean = z.preprocess((value) => {
  if (typeof value !== 'string') return value;
  const text = value.trim().toLowerCase();
  return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : value;
}, z.boolean({ error: 'must be true or false' }));

/** The predict parameters besides `file`, with the spec's defaults and ranges. */
export const PredictParameters = z.strictObject({
  conf: FormNumber(z.number({ error: 'must be a number from 0.01 to 1.0' }).min(0.01).max(1)).default(0.25).meta({ description: 'Minimum confidence, 0.01-1.0' }),
  iou: FormNumber(z.number({ error: 'must be a number from 0.0 to 0.95' }).min(0).max(0.95)).default(0.7).meta({ description: 'NMS IoU threshold, 0.0-0.95' }),
  imgsz: FormNumber(z.number({ error: 'must be an integer from 32 to 1280' }).int().min(32).max(1280))
    .optional()
    .meta({ description: 'Inference size, 32-1280 (rounded up to the model stride); default: the size the model was trained at, else 640' }),
  normalize: FormBoolean.default(false).meta({ description: 'Coordinates as 0-1 fractions of the image width and height' }),
  decimals: FormNumber(z.number({ error: 'must be an integer from 0 to 10' }).int().min(0).max(10)).default(5).meta({ description: 'Rounding of every number, 0-10' }),
  vid_stride: FormNumber(z.number({ error: 'must be an integer of at least 1' }).int().min(1)).default(1).meta({ description: 'Video frame stride; images ignore it' }),
  bits: FormNumber(z.union([z.literal(8), z.literal(12), z.literal(16)], { error: 'must be 8, 12 or 16' })).default(8).meta({ description: 'Depth PNG bit depth (depth models only): 8, 12 or 16' }),
  source: z
    .string()
    .max(4096, 'must be at most 4,096 characters')
    .optional()
    .meta({ description: 'Instead of file: an http(s) image URL (fetched by the server, public addresses only unless allowed), a data: URI, or base64' }),
});
export type PredictParameters = z.output<typeof PredictParameters>;

/** The request body as documented (multipart/form-data, or urlencoded with source). */
export const PredictForm = PredictParameters.extend({
  file: z.string().optional().meta({ format: 'binary', description: 'The image (JPEG, PNG, WebP, BMP, TIFF, …), required unless source is given; at most PREDICT_MAX_BYTES' }),
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
  keypoints: z.object({ x: z.array(z.number()), y: z.array(z.number()), visible: z.array(z.number()).optional() }).optional(),
});

const Png = { shape: z.array(z.number().int()).meta({ description: '[height, width]' }), encoding: z.literal('png'), data: z.string().meta({ description: 'Base64 PNG' }) };

const PredictedImage = z.object({
  shape: z.array(z.number().int()).meta({ description: '[height, width] of the input image' }),
  speed: z.object({ preprocess: z.number(), inference: z.number(), postprocess: z.number() }).meta({ description: 'Milliseconds' }),
  results: z.array(ResultRow),
  semantic_mask: z.object(Png).optional().meta({ description: 'Semantic models: the class index of every pixel, an 8-bit grey PNG' }),
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
