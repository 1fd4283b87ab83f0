import { z } from 'zod';

export const ApiKeyListItem = z.object({
  keyId: z.string().meta({ description: "The key's id (not the key)" }),
  keyPrefix: z
    .string()
    .length(11)
    .meta({ description: 'The display prefix again, under the name the hosted service uses' }),
  prefix: z.string().length(11).meta({ description: 'Display prefix: ul_ and the first 8 hex digits' }),
  name: z.string(),
  createdAt: z.iso.datetime(),
  lastUsedAt: z.iso.datetime().nullable(),
});

export const ApiKeyList = z.object({ keys: z.array(ApiKeyListItem), total: z.number().int() });
