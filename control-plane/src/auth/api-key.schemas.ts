import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';

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

export const ApiKeyCreateBody = z.object({
  name: z.string().trim().min(1).max(100).meta({ description: 'What the key is for, 1-100 characters' }),
});

export const ApiKeyCreated = ApiKeyListItem.extend({
  key: z
    .string()
    .meta({ description: 'The key itself (ul_ and 40 hex digits): shown in this response only, never again' }),
});

export const ApiKeyPath = z.object({ keyId: ObjectId.meta({ description: 'keyId of GET /api/api-keys' }) });

export const ApiKeyRevoked = z.object({ success: z.literal(true), keyId: ObjectId, prefix: z.string().length(11) });
