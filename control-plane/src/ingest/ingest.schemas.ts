import { z } from 'zod';
import { ClassMapping } from '../datasets/class.schemas.ts';
import { SplitName } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { MAX_METADATA_CHARS, MetadataObject } from '../validation/metadata.ts';

export const CONFLICT_POLICIES = ['skip', 'keep_both', 'replace'] as const;
export type ConflictPolicy = (typeof CONFLICT_POLICIES)[number];
export const MAX_SOURCE_URL = 4096;
export const MAX_ARCHIVE_PATH = 1024;

const CloudReference = z.strictObject({
  provider: z.literal('cloud'),
  integrationId: ObjectId,
  target: z.string().min(1).max(1024),
  prefix: z.string().max(1024).optional(),
});
const LocalReference = z.strictObject({
  provider: z.literal('local'),
  keyId: ObjectId.meta({ description: 'The worker host that reads the files' }),
  root: z.string().min(1).max(1024),
  prefix: z.string().max(1024).optional(),
});

export const IngestBody = z
  .strictObject({
    sessionId: ObjectId.optional().meta({
      description: 'An upload session of this dataset; completed here if complete was not called',
    }),
    sourceUrl: z
      .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
      .max(MAX_SOURCE_URL)
      .optional()
      .meta({ description: 'A URL of a .zip, .tar, .tar.gz, .tgz or .ndjson file' }),
    reference: z.discriminatedUnion('provider', [CloudReference, LocalReference]).optional(),
    targetSplit: SplitName.optional().meta({ description: "Overrides the archive's split folders" }),
    conflictPolicy: z.enum(CONFLICT_POLICIES, { error: 'must be skip, keep_both or replace' }).default('skip').meta({
      description:
        'For an image whose file (same hash) is already in its split: skip it (default), add it again, or replace the copy there',
    }),
    classMapping: ClassMapping.optional().meta({
      description: 'Incoming class name → dataset class index, existing or new class name, or null to drop its labels',
    }),
    imageMetadata: z
      .record(z.string().min(1).max(MAX_ARCHIVE_PATH), MetadataObject)
      .refine(
        (map) => JSON.stringify(map).length <= MAX_METADATA_CHARS,
        `must be at most ${MAX_METADATA_CHARS} characters serialized`,
      )
      .optional()
      .meta({
        description:
          'Custom metadata keyed by normalized archive-relative path (or NDJSON file value); NDJSON record metadata wins',
      }),
  })
  .refine(
    (body) => [body.sessionId, body.sourceUrl, body.reference].filter((source) => source !== undefined).length === 1,
    {
      message: 'send exactly one of sessionId, sourceUrl or reference',
    },
  );
export type IngestRequest = z.output<typeof IngestBody>;

export const IngestQueued = z.object({ jobId: ObjectId, status: z.literal('queued') });
