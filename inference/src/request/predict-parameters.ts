// The parameters of a predict request (besides its image), as the control plane's predict and a deployment's inference
// server both read them: one schema, so both answer the same request the same way.
import { z } from 'zod';

/** Form fields arrive as text (multipart, urlencoded); JSON bodies may carry numbers and booleans as such. */
const FormNumber = <T extends z.ZodType>(rule: T) =>
  z.preprocess((value) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value), rule);
const FormBoolean = z.preprocess(
  (value) => {
    if (typeof value !== 'string') return value;
    const text = value.trim().toLowerCase();
    return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : value;
  },
  z.boolean({ error: 'must be true or false' }),
);

/** The predict parameters besides `file`, with the spec's defaults and ranges. */
export const PredictParameters = z.strictObject({
  conf: FormNumber(z.number({ error: 'must be a number from 0.01 to 1.0' }).min(0.01).max(1))
    .default(0.25)
    .meta({ description: 'Minimum confidence, 0.01-1.0' }),
  iou: FormNumber(z.number({ error: 'must be a number from 0.0 to 0.95' }).min(0).max(0.95))
    .default(0.7)
    .meta({ description: 'NMS IoU threshold, 0.0-0.95' }),
  imgsz: FormNumber(z.number({ error: 'must be an integer from 32 to 1280' }).int().min(32).max(1280))
    .optional()
    .meta({
      description:
        'Inference size, 32-1280 (rounded up to the model stride); default: the size the model was trained at, else 640',
    }),
  normalize: FormBoolean.default(false).meta({
    description: 'Coordinates as 0-1 fractions of the image width and height',
  }),
  decimals: FormNumber(z.number({ error: 'must be an integer from 0 to 10' }).int().min(0).max(10))
    .default(5)
    .meta({ description: 'Rounding of every number, 0-10' }),
  vid_stride: FormNumber(z.number({ error: 'must be an integer of at least 1' }).int().min(1))
    .default(1)
    .meta({ description: 'Video frame stride; images ignore it' }),
  bits: FormNumber(z.union([z.literal(8), z.literal(12), z.literal(16)], { error: 'must be 8, 12 or 16' }))
    .default(8)
    .meta({ description: 'Depth PNG bit depth (depth models only): 8, 12 or 16' }),
  source: z.string().max(4096, 'must be at most 4,096 characters').optional().meta({
    description:
      'Instead of file: an http(s) image URL (fetched by the server, public addresses only unless allowed), a data: URI, or base64',
  }),
});
export type PredictParameters = z.output<typeof PredictParameters>;
