import { z } from 'zod';
import { storableJsonProblem } from './storable-json.ts';

export const MAX_METADATA_KEY = 128;
export const MAX_METADATA_CHARS = 500_000;
export const MAX_METADATA_DEPTH = 32;

/**
 * User-defined metadata: a JSON object with keys up to 128 characters, nested up to 32 levels, up to
 * 500,000 characters serialized. The depth is checked first: serializing is recursive.
 */
export const MetadataObject = z
  .record(z.string(), z.unknown())
  .superRefine((value, ctx) => {
    const longKey = Object.keys(value).find((key) => key.length > MAX_METADATA_KEY);
    const problem = storableJsonProblem(value, MAX_METADATA_DEPTH);
    if (longKey !== undefined)
      ctx.addIssue({
        code: 'custom',
        message: `key "${longKey.slice(0, 40)}…" is longer than ${MAX_METADATA_KEY} characters`,
      });
    else if (problem) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
    else if (JSON.stringify(value).length > MAX_METADATA_CHARS)
      ctx.addIssue({ code: 'custom', message: `is longer than ${MAX_METADATA_CHARS} characters serialized` });
  })
  .meta({
    description: `Custom JSON object; keys up to ${MAX_METADATA_KEY} characters, nested up to ${MAX_METADATA_DEPTH} levels, up to ${MAX_METADATA_CHARS} characters serialized`,
  });
