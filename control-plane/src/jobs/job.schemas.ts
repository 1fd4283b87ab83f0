import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { JOB_STATUSES } from './job.entity.ts';

export const JobPath = z.object({ jobId: ObjectId });

export const JobView = z.object({
  id: ObjectId,
  kind: z.string().meta({ description: 'What the job does: ingest (of a dataset), training (of a model), …' }),
  status: z.enum(JOB_STATUSES),
  datasetId: ObjectId.nullable().meta({
    description: 'The dataset the job works on (ingest); null for jobs about something else',
  }),
  modelId: ObjectId.nullable().meta({
    description: 'The model the job works on (training); null for jobs about something else',
  }),
  progress: z
    .object({
      stage: z.string(),
      percent: z.number(),
      processed: z.number().int().optional(),
      total: z.number().int().optional(),
    })
    .nullable(),
  result: z
    .record(z.string(), z.unknown())
    .nullable()
    .meta({ description: 'Counts and per-item problems, once completed (ingest: imagesAdded, imagesSkipped, …)' }),
  error: z.string().nullable().meta({ description: 'Why it failed' }),
  attempts: z.number().int(),
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().nullable(),
  finishedAt: z.iso.datetime().nullable(),
});
export const JobRead = z.object({ job: JobView });
export const JobCancelled = z.object({ success: z.literal(true), status: z.enum(JOB_STATUSES) });

export const JobLogQuery = z.object({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .default(0)
    .meta({ description: "Return lines after this seq (the previous page's nextAfter); 0 for the first" }),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});
export const JobLogs = z.object({
  lines: z.array(
    z.object({
      seq: z.number().int().meta({ description: 'Increasing within the job; pass the last one as after to read on' }),
      stream: z.enum(['stdout', 'stderr']),
      line: z.string(),
      at: z.iso.datetime(),
    }),
  ),
  nextAfter: z
    .number()
    .int()
    .meta({ description: 'The after value for the next call (unchanged when no new line arrived)' }),
  status: z
    .enum(JOB_STATUSES)
    .meta({ description: "The job's status now: poll until it is completed, failed or cancelled and no line is left" }),
});
