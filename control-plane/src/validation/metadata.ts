import { z } from 'zod';

export const MAX_METADATA_KEY = 128;
export const MAX_METADATA_CHARS = 500_000;

/** User-defined metadata: a JSON object with keys up to 128 characters, up to 500,000 characters serialized. */
export const MetadataObject = z
  .record(z.string(), z.unknown())
  .superRefine((value, ctx) => {
    const longKey = Object.keys(value).find((key) => key.length > MAX_METADATA_KEY);
    if (longKey !== undefined) ctx.addIssue({ code: 'custom', message: `key "${longKey.slice(0, 40)}…" is longer than ${MAX_METADATA_KEY} characters` });
    else if (JSON.stringify(value).length > MAX_METADATA_CHARS) ctx.addIssue({ code: 'custom', message: `is longer than ${MAX_METADATA_CHARS} characters serialized` });
  })
  .meta({ description: `Custom JSON object; keys up to ${MAX_METADATA_KEY} characters, up to ${MAX_METADATA_CHARS} characters serialized` });
