import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { queryInt } from '../validation/integers.ts';
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

/** A page of a workspace's jobs: where the next one starts (nextCursor), what to list. */
export const JobListQuery = z.object({
  status: z
    .enum(['active', ...JOB_STATUSES])
    .optional()
    .meta({ description: 'active: queued or running; absent: every status' }),
  kind: z
    .string()
    .max(64)
    .optional()
    .meta({ description: 'Only jobs of this kind (ingest, training, export, deployment, dataset-embeddings, …)' }),
  limit: queryInt().min(1).max(200).default(50),
  cursor: z.string().max(100).optional().meta({ description: 'nextCursor of the previous page' }),
});

export const JobListItem = JobView.extend({
  host: z.string().nullable().meta({ description: 'The worker host running its current attempt; null when none' }),
});

export const JobList = z.object({
  jobs: z.array(JobListItem).meta({ description: 'Newest first' }),
  nextCursor: z.string().nullable().meta({ description: 'Pass as cursor for the next page; null on the last' }),
});
