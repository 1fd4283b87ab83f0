import { z } from 'zod';
import { ErrorBody } from '../http/openapi.ts';
import { LabelInput } from '../images/labels.ts';
import { AnnotateFields } from './auto-annotate.ts';

export const ImagePredictBody = z.strictObject(AnnotateFields);

export const ImagePredicted = z.object({
  success: z.literal(true),
  predictions: z
    .array(LabelInput)
    .meta({ description: "Labels in the dataset's format (as PATCH /api/images/{imageId} takes them), not saved" }),
  confidences: z.array(z.number()).meta({ description: 'The confidence of each prediction, index-aligned' }),
  modelUsed: z.string().meta({ description: 'The modelId that ran, as given' }),
  inferenceTime: z.number().meta({ description: 'Milliseconds of preprocessing, inference and postprocessing' }),
});

/** 422 for a class mismatch: the model classes with no dataset class of the same name. */
export const ClassMismatch = ErrorBody.extend({
  unmatchedClasses: z
    .array(z.string())
    .optional()
    .meta({ description: 'Model classes with no dataset class of the same name (class mismatch)' }),
  code: z
    .literal('missing_provider_api_key')
    .optional()
    .meta({ description: 'Set for a paid provider model: no provider key is available' }),
});
