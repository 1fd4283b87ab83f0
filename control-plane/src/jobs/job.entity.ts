import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** Where a long job stands, for status reads and progress bars. */
export interface JobProgress {
  stage: string;
  percent: number;
  processed?: number;
  total?: number;
}

/**
 * A durable background job. A process takes a queued job by setting a lease (owner and expiry) and keeps
 * renewing it while it works; a job whose lease ran out (its process died) is taken again, up to
 * maxAttempts. Cancellation is a request the running handler sees at its next checkpoint.
 */
export const JobSchema = defineEntity({
  name: 'Job',
  tableName: 'jobs',
  extends: BaseSchema,
  indexes: [{ properties: ['status', 'priority', 'createdAt'] }, { properties: ['subjectId', 'status'] }, { properties: ['workspace', 'createdAt'] }],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    kind: p.string().length(64),
    /** The resource the job works on (a dataset for ingest), so its jobs can be found and serialized. */
    subjectId: p.string().length(24).nullable(),
    status: p.enum(JOB_STATUSES).default('queued'),
    priority: p.integer().default(0),
    payload: p.json<Record<string, unknown>>().default('{}'),
    progress: p.json<JobProgress>().nullable(),
    /** What the job produced: counts and the like. */
    result: p.json<Record<string, unknown>>().nullable(),
    /** Why it failed, in words a user can act on. */
    error: p.text().nullable(),
    attempts: p.integer().default(0),
    maxAttempts: p.integer().default(3),
    leaseOwner: p.string().length(64).nullable(),
    leaseExpiresAt: p.datetime().nullable(),
    cancelRequested: p.boolean().default(false),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
  },
});
export class Job extends JobSchema.class {}
JobSchema.setClass(Job);
