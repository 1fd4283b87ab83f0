import { z } from 'zod';
import { Splits } from './dataset.schemas.ts';

export const RedistributeBody = z
  .object({ train: z.number().min(0).max(100), val: z.number().min(0).max(100), test: z.number().min(0).max(100) })
  .refine((body) => Math.abs(body.train + body.val + body.test - 100) < 1e-6, 'train, val and test must add up to 100');
export const Redistributed = z.object({
  success: z.literal(true),
  splits: Splits,
  modified: z.number().int().meta({ description: 'Images that changed split' }),
});
