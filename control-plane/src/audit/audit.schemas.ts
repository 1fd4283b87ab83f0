import { z } from 'zod';
import { queryInt } from '../validation/integers.ts';

/** An ISO 8601 date-time PostgreSQL takes (no year 0): 1970 to 9999. */
const Time = z.iso.datetime({ offset: true }).refine((value) => {
  const time = Date.parse(value);
  return time >= 0 && time < Date.UTC(10_000, 0, 1);
}, 'must be a date-time from 1970 to 9999');

export const AuditQuery = z.object({
  actor: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .meta({ description: "Only this user's entries (a username; `vpctl` for the operator's commands)" }),
  action: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .meta({ description: 'Only this action: a named one (`keys.create`) or `METHOD /api/route/template`' }),
  resource: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .meta({ description: 'Only this resource and those below it: `datasets/alice` matches `datasets/alice/shapes`' }),
  from: Time.optional().meta({ description: 'Only entries at or after this ISO 8601 date-time' }),
  to: Time.optional().meta({ description: 'Only entries before this ISO 8601 date-time' }),
  limit: queryInt().min(1).max(200).default(50).meta({ description: '1-200' }),
  cursor: z.string().max(100).optional().meta({ description: 'nextCursor of the previous page' }),
});

export const AuditEntry = z.object({
  id: z.string().meta({ description: "The entry's sequence number (a decimal string)" }),
  at: z.iso.datetime().meta({ description: 'When the request arrived (vpctl: when the command made the change)' }),
  workspace: z
    .string()
    .nullable()
    .meta({ description: "The handle of the workspace the change was made in (the caller's here)" }),
  actor: z
    .object({
      id: z.string().nullable().meta({ description: "The user's id; null for the operator (vpctl)" }),
      username: z.string(),
    })
    .nullable()
    .meta({
      description: 'Who made it: the user of the key or session, `vpctl`; null when nobody known (a failed sign-in)',
    }),
  via: z.string().nullable().meta({
    description: "The API key's display prefix (never the key), `session` (the console) or `vpctl`; null when none",
  }),
  clientAddress: z.string().nullable().meta({ description: "The client's address (null for vpctl)" }),
  action: z.string(),
  resource: z.string().meta({ description: "What it changed: the route's path parameters (never a query or a body)" }),
  outcome: z.number().int().meta({ description: 'The HTTP status it was answered with (vpctl: 200 or its error)' }),
  requestId: z.string().nullable().meta({ description: 'X-Request-Id of the request (null for vpctl)' }),
});

export const AuditPage = z.object({
  entries: z.array(AuditEntry).meta({ description: 'Newest first' }),
  nextCursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last' }),
});
