import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { JOB_STATUSES } from './job.entity.ts';

export const JobPath = z.object({ jobId: ObjectId });

export const JobView = z.object({
  id: ObjectId,
  kind: z.string().meta({ description: 'What the job does: ingest, …' }),
  status: z.enum(JOB_STATUSES),
  datasetId: ObjectId.nullable().meta({ description: 'The dataset the job works on, if any' }),
  progress: z
    .object({ stage: z.string(), percent: z.number(), processed: z.number().int().optional(), total: z.number().int().optional() })
    .nullable(),
  result: z.record(z.string(), z.unknown()).nullable().meta({ description: 'Counts and per-item problems, once completed (ingest: imagesAdded, imagesSkipped, …)' }),
  error: z.string().nullable().meta({ description: 'Why it failed' }),
  attempts: z.number().int(),
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().nullable(),
  finishedAt: z.iso.datetime().nullable(),
});
export const JobRead = z.object({ job: JobView });
export const JobCancelled = z.object({ success: z.literal(true), status: z.enum(JOB_STATUSES) });
