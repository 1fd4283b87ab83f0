import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { ErrorBody } from '../http/openapi.ts';
import { MAX_SELECTED_IDS } from '../images/image.schemas.ts';
import { ClassMapping } from './class.schemas.ts';

export const AdoptBody = z.object({
  imageIds: z
    .array(ObjectId)
    .min(1)
    .max(MAX_SELECTED_IDS)
    .meta({ description: `Up to ${MAX_SELECTED_IDS} images of any datasets the key can view` }),
  release: z.boolean().optional().meta({
    description:
      'true moves the images out of their datasets (editor there); false (or absent) copies them. Sent at all, true or false, it preserves labels and splits',
  }),
  classMapping: ClassMapping.optional().meta({
    description:
      'Source class name → destination class index, new (or existing) class name, or null to drop its labels',
  }),
});

export const Adopted = z.object({
  adopted: z.number().int().meta({ description: 'Images added to the dataset' }),
  skipped: z.number().int().meta({ description: 'Images whose file (same hash) was already in the destination split' }),
});

export const AdoptUnmatched = ErrorBody.extend({
  unmatchedClasses: z.array(z.string()).meta({ description: 'Source class names neither mapped nor matched' }),
});
