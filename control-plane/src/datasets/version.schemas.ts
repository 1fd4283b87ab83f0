import { z } from 'zod';
import { ImageHash } from '../images/image.schemas.ts';
import { LabelInput } from '../images/labels.ts';
import { int, queryInt } from '../validation/integers.ts';
import { SplitName, Task } from './dataset.schemas.ts';

const VersionNumber = int().min(1).meta({ description: 'A saved version, numbered from 1' });
const Description = z.string().max(1000);
const DownloadUrl = z
  .string()
  .meta({ description: 'Signed URL of the NDJSON file; its path stays the same across calls, only the query changes' });

export const ExportQuery = z.object({
  v: queryInt().min(1).optional().meta({ description: 'A saved version (1-indexed); omit for the current state' }),
});

export const CurrentExport = z.object({
  downloadUrl: DownloadUrl,
  cached: z
    .boolean()
    .meta({ description: 'The file written earlier was reused: nothing changed since and it is under a day old' }),
});
export const SavedExport = z.object({ downloadUrl: DownloadUrl, version: VersionNumber });
export const ExportRead = z.union([CurrentExport, SavedExport]);

export const VersionCreate = z
  .object({
    description: Description.optional(),
    download: z.boolean().default(true).meta({ description: 'false leaves out downloadUrl (no file is written)' }),
  })
  .strict()
  // The whole body is optional: no body saves a version and answers its download URL.
  .prefault({});
export const VersionCreated = z.object({
  version: VersionNumber,
  downloadUrl: DownloadUrl.optional(),
  reused: z.boolean().meta({
    description: 'The dataset matched a saved version, which is answered (its description updated when one was sent)',
  }),
});

export const VersionPatch = z.object({ version: VersionNumber, description: Description }).strict();
export const VersionPatched = z.object({ ok: z.literal(true) });

export const RestoreBody = z.object({ version: VersionNumber }).strict();
export const Restored = z.object({ version: VersionNumber, imageCount: z.number().int() });

export const CompareQuery = z.object({
  base: queryInt().min(1).meta({ description: 'The version compared from' }),
  head: queryInt().min(1).meta({ description: 'The version compared to; swapping the two swaps added and removed' }),
  cursor: z
    .string()
    .regex(/^[0-9a-f]{64}:\d{1,6}$/, 'must be the nextCursor of the previous page')
    .optional()
    .meta({ description: 'nextCursor of the previous page' }),
  hash: ImageHash.optional().meta({
    description: 'Answer that image as each of the two versions keeps it, instead of the differences',
  }),
});

const CompareSide = z.object({ split: SplitName, labelCount: z.number().int() });
export const CompareItem = z.object({
  hash: z.string(),
  name: z.string(),
  ext: z.string(),
  fields: z
    .array(z.enum(['labels', 'metadata', 'name', 'error']))
    .meta({ description: 'What differs for a modified or moved image; empty for added and removed' }),
  labelsAdded: z.number().int(),
  labelsRemoved: z.number().int(),
  change: z
    .enum(['added', 'removed', 'modified', 'moved'])
    .meta({ description: 'modified: same file, other labels or metadata; moved: same file, other split' }),
  base: CompareSide.optional().meta({ description: 'The image in base; absent when added' }),
  head: CompareSide.optional().meta({ description: 'The image in head; absent when removed' }),
});
const FieldChange = z.object({ base: z.unknown(), head: z.unknown() });
export const CompareSummary = z.object({
  added: z.number().int(),
  removed: z.number().int(),
  modified: z.number().int(),
  moved: z.number().int(),
  labelsAdded: z.number().int(),
  labelsRemoved: z.number().int(),
  header: z.object({
    classChanges: z.object({ added: z.array(z.string()), removed: z.array(z.string()) }),
    classesAdded: z.array(z.string()).meta({ description: 'classChanges.added, as the hosted service names it' }),
    classesRemoved: z.array(z.string()).meta({ description: 'classChanges.removed, as the hosted service names it' }),
    classesRenamed: z
      .array(z.object({ from: z.string(), to: z.string() }))
      .meta({ description: 'A class at the same index under a name the other version does not have' }),
    fields: z
      .record(z.string(), FieldChange)
      .meta({ description: 'Dataset fields (name, description, task, kptShape) that differ' }),
    changed: z.array(z.string()).meta({ description: 'The names of those fields' }),
  }),
});
export const VersionCompare = z.object({
  summary: CompareSummary.optional().meta({ description: 'First page only' }),
  items: z.array(CompareItem).meta({ description: 'Up to 100 changed images, by hash' }),
  nextCursor: z.string().optional().meta({ description: 'Present when more items follow' }),
});
export const CompareImage = z.object({
  versions: z
    .array(
      z
        .object({
          version: VersionNumber,
          task: Task,
          kptShape: z.array(z.number().int()).optional(),
          classNames: z
            .array(z.string())
            .meta({ description: "The version's classes: a label's classId indexes them" }),
          images: z
            .array(
              z.object({
                split: SplitName,
                name: z.string(),
                ext: z.string(),
                width: z.number().int(),
                height: z.number().int(),
                labels: z.array(LabelInput),
                labelCount: z.number().int(),
                metadata: z.record(z.string(), z.unknown()),
                imageUrl: z.string().meta({ description: 'Signed URL of the bytes' }),
                thumbnailUrl: z.string().optional(),
              }),
            )
            .meta({ description: 'Each copy of the file in the version (usually one)' }),
        })
        .nullable(),
    )
    .meta({
      description:
        'base then head (one entry when they are the same version); null where that version does not hold the image',
    }),
});
export const CompareRead = z.union([VersionCompare, CompareImage]);
