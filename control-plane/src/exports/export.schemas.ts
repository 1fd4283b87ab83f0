import { z } from 'zod';
import { Region, Task, Timestamp } from '../datasets/dataset.schemas.ts';
import { ObjectId } from '../db/ids.ts';
import { limitQuery } from '../http/pagination.ts';
import { ModelPath } from '../models/model.schemas.ts';
import { ExportArgs } from './export-args.ts';
import { EXPORT_FORMAT_IDS, MOBILE_FORMATS } from './export-formats.ts';
import { MAX_EXPORT_WAIT_SECONDS } from './export-waits.ts';
import { EXPORT_STATUSES } from './export.store.ts';

const Format = z.enum(EXPORT_FORMAT_IDS, { error: `must be one of ${EXPORT_FORMAT_IDS.join(', ')}` });
const Status = z.enum(EXPORT_STATUSES, { error: `must be one of ${EXPORT_STATUSES.join(', ')}` });

export const ExportPath = ModelPath.extend({ exportId: ObjectId });
export const MobileExportPath = z.object({ exportId: ObjectId });

export const ExportListQuery = limitQuery(20, 100).extend({ status: Status.optional() });

export const ExportCreate = z
  .object({
    format: Format,
    gpuType: z.string().max(64).nullable().optional().meta({
      description:
        'Required for engine (the GPU type the TensorRT engine is built on, and for); refused for other formats',
    }),
    args: ExportArgs.nullable().optional(),
  })
  .meta({ description: 'format required; gpuType for engine only; args per the format (see the description)' });

export const ExportView = z
  .object({
    id: ObjectId,
    status: Status,
    format: Format,
    args: z.record(z.string(), z.unknown()).meta({
      description: 'The args as normalized: only what differs from the defaults, quantize as ultralytics takes it',
    }),
    gpuType: z.string().optional().meta({ description: 'engine exports only' }),
    file: z.object({ size: z.number().int(), downloadUrl: z.string(), downloadFilename: z.string() }).optional().meta({
      description: 'When completed: the artifact (a directory artifact as a zip), its download URL valid for 1 hour',
    }),
    error: z.object({ message: z.string(), timestamp: Timestamp }).optional().meta({ description: 'When failed' }),
    startedAt: Timestamp.optional(),
    completedAt: Timestamp.optional(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ description: 'A model export' });

export const ExportList = z.object({ exports: z.array(ExportView), region: Region });
export const ExportRead = z.object({ export: ExportView });

export const ExportReadQuery = z.object({
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_EXPORT_WAIT_SECONDS)
    .optional()
    .meta({
      description:
        `Seconds (at most ${MAX_EXPORT_WAIT_SECONDS}) to hold the answer while the export is queued, starting or running: it comes ` +
        'as soon as the export ends, or when the time is up with the status then. Without it (or 0) the answer is immediate.',
    }),
});

export const ExportCreated = z.object({
  id: ObjectId,
  format: Format,
  status: z
    .enum(['queued', 'running'])
    .meta({ description: 'queued; running for a reused artifact (already completed: GET shows completed)' }),
  gpuType: z.string().optional(),
  region: Region,
  reused: z.boolean().meta({
    description:
      'An equal completed export (same weights hash, format, args and GPU type) in the workspace gave its artifact',
  }),
});

export const ExportDeleted = z.object({ success: z.literal(true), action: z.enum(['cancelled', 'deleted']) });

export const MobileLink = z.object({
  importUrl: z.string().meta({
    description:
      '<appliance>/api/mobile/models/<exportId>#expires=<unix seconds>&signature=<hmac>: POST the fragment as JSON to the same path',
  }),
  expiresAt: Timestamp,
});

export const MobileResolve = z.object({
  expires: z.number().int().min(0).max(1e12),
  signature: z.string().min(1).max(200),
});

export const MobileModel = z.object({
  version: z.literal(1),
  exportId: ObjectId,
  name: z.string(),
  task: Task,
  format: z.enum(MOBILE_FORMATS as [string, ...string[]]),
  filename: z.string(),
  size: z.number().int(),
  downloadUrl: z.string(),
  expiresAt: Timestamp,
});
