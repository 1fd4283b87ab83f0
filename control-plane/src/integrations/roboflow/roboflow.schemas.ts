import { z } from 'zod';

const ApiKey = z
  .string()
  .min(1)
  .max(256)
  .meta({ description: 'A Roboflow API key; on this appliance it is never used, stored or logged' });

export const RoboflowPreviewBody = z.strictObject({ apiKey: ApiKey.optional() });

export const RoboflowImportBody = z.strictObject({
  apiKey: ApiKey.optional(),
  items: z
    .array(
      // Not strict: an item may carry more of a preview entry's fields (projectName, task...), which are ignored.
      z.object({
        workspace: z.string().min(1).max(256).optional().meta({ description: 'The Roboflow workspace' }),
        projectId: z.string().min(1).max(256).meta({ description: 'The Roboflow project' }),
        version: z.number().int().min(1).meta({ description: 'The dataset version to import' }),
      }),
    )
    .min(1)
    .max(100)
    .meta({ description: 'The dataset versions to import' }),
});
