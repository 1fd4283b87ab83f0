import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';
import { Host } from '../hosts/host.entity.ts';

export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** control-plane: a JobRunner in some replica runs it; host: the scheduler assigns it to a worker host. */
export const JOB_PLACEMENTS = ['control-plane', 'host'] as const;

/** Where a long job stands, for status reads and progress bars. */
export interface JobProgress {
  stage: string;
  percent: number;
  processed?: number;
  total?: number;
  /** Ingests by reference, while listing: the storage's objects scanned so far. */
  objects?: number;
}

/**
 * A durable background job. A process takes a queued job by setting a lease (owner and expiry) and keeps
 * renewing it while it works; a job whose lease ran out (its process died) is taken again, up to
 * maxAttempts. Cancellation is a request the running handler sees at its next checkpoint. Its status changes only
 * through jobs/job-lifecycle.ts.
 */
export const JobSchema = defineEntity({
  name: 'Job',
  tableName: 'jobs',
  extends: BaseSchema,
  indexes: [
    { properties: ['status', 'priority', 'createdAt'] },
    { properties: ['subjectId', 'status'] },
    { properties: ['workspace', 'createdAt'] },
    { properties: ['host', 'status'] },
  ],
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
    /** At most one active job of its kind per subject (a partial unique index, jobs_one_active_per_subject). */
    exclusive: p.boolean().default(false),
    attempts: p.integer().default(0),
    maxAttempts: p.integer().default(3),
    leaseOwner: p.string().length(64).nullable(),
    leaseExpiresAt: p.datetime().nullable(),
    cancelRequested: p.boolean().default(false),
    placement: p.enum(JOB_PLACEMENTS).default('control-plane'),
    /** Host jobs: the GPU type they need (null: any type; ignored when gpuCount is 0, a CPU job). */
    gpuType: p.string().length(64).nullable(),
    gpuCount: p.integer().default(0),
    /** Host jobs: the host memory they need; hosts with less never take them. */
    memoryBytes: p.bigint('number').nullable(),
    /** Host jobs: the export toolchain they need (a model format ID); only hosts that report it take them. */
    toolchain: p.string().length(32).nullable(),
    /** Host jobs: the deployment region their host must serve (hosts of no region serve every one); null: any host. */
    region: p.string().length(32).nullable(),
    /** Host jobs: the service they run (a deployment's inference server); only hosts that report it take them. */
    service: p.string().length(16).nullable(),
    /** Host jobs: safe to run again from the start (or from their own checkpoint) when their host is lost. */
    restartable: p.boolean().default(false),
    /** The host running the current attempt, and the GPU indexes it holds there. */
    host: () => p.manyToOne(Host).nullable().deleteRule('set null'),
    gpuIndexes: p.json<number[]>().nullable(),
    /** When the host confirmed it started the current attempt; null while the assignment is in flight. */
    acceptedAt: p.datetime().nullable(),
    /** Host jobs: seconds their attempts ran on hosts (acceptance to end, summed): what a training is charged for. */
    runSeconds: p.double().default(0),
    /** Of runSeconds, what the current attempt was counted for when its host was lost (it waits in the queue): its own
     * host, coming back with it, reports its whole run, which replaces this. */
    lostAttemptSeconds: p.double().default(0),
    /** Host jobs: ended (for good), their kind's bookkeeping not yet done; set in the statement that ends them, so a
     * replica dying in between only delays it. */
    settlePending: p.boolean().default(false),
    /** Log lines kept (job_logs), counted so one chatty job cannot fill the database. */
    logLines: p.integer().default(0),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
  },
});
export class Job extends JobSchema.class {}
JobSchema.setClass(Job);
