import { z } from 'zod';

const VersionNumber = z.number().int().min(1).meta({ description: 'A saved version, numbered from 1' });
const Description = z.string().max(1000);
const DownloadUrl = z.string().meta({ description: 'Signed URL of the NDJSON file; its path stays the same across calls, only the query changes' });

export const ExportQuery = z.object({
  v: z.coerce.number().int().min(1).optional().meta({ description: 'A saved version (1-indexed); omit for the current state' }),
});

export const CurrentExport = z.object({
  downloadUrl: DownloadUrl,
  cached: z.boolean().meta({ description: 'The file written earlier was reused: nothing changed since and it is under a day old' }),
});
export const SavedExport = z.object({ downloadUrl: DownloadUrl, version: VersionNumber });
export const ExportRead = z.union([CurrentExport, SavedExport]);

export const VersionCreate = z
  .object({
    description: Description.optional(),
    download: z.boolean().default(true).meta({ description: 'false leaves out downloadUrl (no file is written)' }),
  })
  .strict();
export const VersionCreated = z.object({
  version: VersionNumber,
  downloadUrl: DownloadUrl.optional(),
  reused: z.boolean().meta({ description: 'The dataset matched a saved version, which is answered (its description updated when one was sent)' }),
});

export const VersionPatch = z.object({ version: VersionNumber, description: Description }).strict();
export const VersionPatched = z.object({ ok: z.literal(true) });

export const RestoreBody = z.object({ version: VersionNumber }).strict();
export const Restored = z.object({ version: VersionNumber, imageCount: z.number().int() });
