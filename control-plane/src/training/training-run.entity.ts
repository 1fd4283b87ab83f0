import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { Job } from '../jobs/job.entity.ts';
import { Model } from '../models/model.entity.ts';

export const RUN_STATUSES = ['running', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * One `yolo train` process reporting to the platform (its runId): started by a training job on a worker host,
 * or by a user on their own machine (no job). Its events land here and on the model.
 */
export const TrainingRunSchema = defineEntity({
  name: 'TrainingRun',
  tableName: 'training_runs',
  indexes: [
    { properties: ['model', 'createdAt'] },
    { properties: ['job'] },
    // The silence sweep's look-up: runs on users' own machines still running, by their last report.
    {
      name: 'training_runs_own_compute_last_report_at_index',
      expression:
        'create index "training_runs_own_compute_last_report_at_index" on "training_runs" ("last_report_at") where "status" = \'running\' and "job_id" is null',
    },
  ],
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade'),
    model: () => p.manyToOne(Model).deleteRule('cascade'),
    job: () => p.manyToOne(Job).nullable().deleteRule('set null'),
    status: p.enum(RUN_STATUSES).default('running'),
    epochs: p.integer().nullable(),
    /** Epochs finished so far (epoch_end events). */
    epochsDone: p.integer().default(0),
    device: p.string().length(128).nullable(),
    trainArgs: p.json<Record<string, unknown>>().nullable(),
    environment: p.json<Record<string, unknown>>().nullable(),
    modelInfo: p.json<Record<string, unknown>>().nullable(),
    error: p.text().nullable(),
    /** A user asked to stop it: the next webhook answer says `cancelled: true` (how a cancel reaches a trainer). */
    cancelRequested: p.boolean().default(false),
    /** The last checkpoint promoted for this run (a blob key): where a requeued job resumes from. */
    checkpointKey: p.string().length(1024).nullable(),
    checkpointAt: p.datetime().nullable(),
    /** The trainer's last.pt as its host last uploaded it (every TRAINING_CHECKPOINT_SECONDS): a requeued job resumes from it. */
    resumeKey: p.string().length(1024).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
    /**
     * When the trainer last posted any event: what the silence sweep measures (updatedAt also moves when the
     * platform changes the run, and not on console chunks, which touch only their own table).
     */
    lastReportAt: p.datetime().onCreate(() => new Date()),
    completedAt: p.datetime().nullable(),
  },
});
export class TrainingRun extends TrainingRunSchema.class {}
TrainingRunSchema.setClass(TrainingRun);

/** One epoch_end: the trainer's metrics, system stats and fitness after that epoch (0-based). */
export const TrainingEpochSchema = defineEntity({
  name: 'TrainingEpoch',
  tableName: 'training_epochs',
  uniques: [{ properties: ['run', 'epoch'] }],
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    run: () => p.manyToOne(TrainingRun).deleteRule('cascade'),
    epoch: p.integer(),
    metrics: p.json<Record<string, unknown>>(),
    system: p.json<Record<string, unknown>>().nullable(),
    fitness: p.double().nullable(),
    bestFitness: p.double().nullable(),
    at: p.datetime().onCreate(() => new Date()),
  },
});
export class TrainingEpoch extends TrainingEpochSchema.class {}
TrainingEpochSchema.setClass(TrainingEpoch);

/** A console_output chunk, kept once per chunkId (the client retries). */
export const ConsoleChunkSchema = defineEntity({
  name: 'ConsoleChunk',
  tableName: 'training_console',
  uniques: [{ properties: ['run', 'chunkId'] }],
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    run: () => p.manyToOne(TrainingRun).deleteRule('cascade'),
    /** The client's own chunk number (large: it may be time-based). */
    chunkId: p.bigint('number'),
    content: p.text(),
    lineCount: p.integer(),
    at: p.datetime().onCreate(() => new Date()),
  },
});
export class ConsoleChunk extends ConsoleChunkSchema.class {}
ConsoleChunkSchema.setClass(ConsoleChunk);
