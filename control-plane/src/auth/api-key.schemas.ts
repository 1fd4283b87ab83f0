import { z } from 'zod';

export const ApiKeyListItem = z.object({
  prefix: z.string().length(11).meta({ description: 'Display prefix: ul_ and the first 8 hex digits' }),
  name: z.string(),
  createdAt: z.iso.datetime(),
  lastUsedAt: z.iso.datetime().nullable(),
});

export const ApiKeyList = z.object({ keys: z.array(ApiKeyListItem), total: z.number().int() });
