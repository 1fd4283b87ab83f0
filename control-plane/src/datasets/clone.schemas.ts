import { z } from 'zod';
import { Slug } from '../account/handle.ts';
import { DatasetCreate, DatasetCreated } from './dataset.schemas.ts';

export const DatasetClone = DatasetCreate.pick({ description: true, visibility: true, license: true, owner: true })
  .extend({
    dataset: Slug.optional().meta({
      description: 'URL name of the copy; default <source>-copy, then -copy-2, -copy-3… while taken',
    }),
    name: DatasetCreate.shape.name.optional().meta({ description: 'Default: the source name followed by " (copy)"' }),
  })
  // The whole body is optional: no body clones with every default.
  .prefault({});

export const DatasetCloned = DatasetCreated.extend({
  name: z.string(),
  imageCount: z.number().int(),
  classCount: z.number().int(),
});
