import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { JOB_STATUSES } from '../jobs/job.entity.ts';
import { TrainArgs } from './train-args.ts';

export const TrainingStart = z.object({
  modelId: ObjectId,
  trainArgs: TrainArgs,
  gpuType: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,63}$/)
    .default('rtx-4090')
    .meta({ description: 'A GPU type ID (GET /api/training/gpu-availability), or cpu for CPU-only hosts' }),
  captureDatasetVersion: z
    .boolean()
    .default(false)
    .meta({ description: 'Save the dataset as a version first and train on exactly that version' }),
});

export const TrainingStarted = z.object({
  modelId: ObjectId,
  jobId: ObjectId,
  status: z.literal('starting'),
  gpuType: z.string(),
  estimatedCost: z.object({
    pricePerHour: z.number(),
    gpuMemoryGb: z.number().meta({ description: 'Memory of one GPU of the type; 0 for cpu and unlisted types' }),
  }),
  billing: z.object({
    estimatedCostCents: z.number().int(),
    estimatedCostDisplay: z.string(),
    balanceCents: z.number().int(),
  }),
  datasetVersion: z
    .number()
    .int()
    .optional()
    .meta({ description: 'With captureDatasetVersion: the version trained on' }),
});

export const CONSOLE_TAIL_LINES = 200;

export const TRAINING_STATUSES = ['pending', 'starting', 'running', 'completed', 'failed', 'cancelled'] as const;

export const EpochRecord = z.object({
  epoch: z.number().int().meta({ description: '0-based' }),
  metrics: z.record(z.string(), z.unknown()),
  system: z.record(z.string(), z.unknown()).nullable().meta({
    description: 'Host stats at the epoch end: cpu, ram, disk, network, per-GPU usage, memory, temperature and power',
  }),
  fitness: z.number().nullable(),
  bestFitness: z.number().nullable(),
  at: z.iso.datetime(),
});

const UNTIL_KNOWN = '0 until known';

export const TrainingJobView = z.object({
  id: z.string().meta({
    description:
      'The job id (GET /api/jobs/{id}, logs at /api/jobs/{id}/logs); for a run on your own machine, run-<runId>',
  }),
  status: z.enum(TRAINING_STATUSES).meta({
    description:
      'pending (queued, waiting for a GPU), starting (on a host, before the first report), running, completed, failed, cancelled',
  }),
  source: z.enum(['platform', 'own-compute']),
  runId: z.number().int().nullable(),
  progress: z.object({
    currentEpoch: z.number().int().meta({ description: 'Epochs finished' }),
    totalEpochs: z
      .number()
      .int()
      .meta({ description: `Epochs it was set to run; ${UNTIL_KNOWN}` }),
    percentage: z.number().meta({ description: '0-100' }),
    startedAt: z.iso.datetime().optional().meta({ description: 'When a host started it; absent before' }),
    completedAt: z.iso.datetime().optional().meta({ description: 'When it ended; absent while active' }),
  }),
  timing: z.object({
    elapsedMs: z.number().meta({ description: `Since it started (until it ended); ${UNTIL_KNOWN}` }),
    timePerEpochMs: z.number().meta({ description: `Mean of the finished epochs; ${UNTIL_KNOWN}` }),
    etaMs: z.number().meta({ description: 'Time left at that pace while active; 0 otherwise or until known' }),
  }),
  compute: z
    .object({
      gpuType: z.string().meta({ description: 'A GPU type ID, or cpu' }),
      gpuDisplayName: z.string(),
      gpuMemoryGb: z.number().meta({ description: 'Memory of one GPU of the type; 0 for cpu and unlisted types' }),
      gpuCount: z.number().int(),
      host: z.string().nullable().meta({ description: 'The worker host running it, null while queued' }),
      device: z.string().nullable().meta({ description: 'The device the trainer reported (cpu, 0, 0,1…)' }),
      attempts: z.number().int(),
      jobStatus: z.enum(JOB_STATUSES),
    })
    .nullable()
    .meta({ description: 'Where a platform job runs; null for a run on your own machine' }),
  trainArgs: z.record(z.string(), z.unknown()).nullable(),
  epochMetrics: z
    .record(z.string(), z.unknown())
    .nullable()
    .meta({ description: 'The metrics of the last finished epoch; null before the first' }),
  history: z.array(EpochRecord).meta({ description: 'Every finished epoch with its metrics and host stats' }),
  console: z
    .array(z.string())
    .meta({ description: `The trainer's last console lines (at most ${CONSOLE_TAIL_LINES}), as it streamed them` }),
  datasetVersion: z.number().int().nullable(),
  estimatedCostCents: z.number().int().nullable(),
  error: z
    .object({
      message: z.string().meta({ description: 'Why it failed, without internals' }),
      timestamp: z.iso.datetime().meta({ description: 'When it ended' }),
    })
    .nullable()
    .meta({ description: 'null unless it failed' }),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export const ModelTraining = z.object({ job: TrainingJobView.nullable() });
export const TrainingCancelled = z.object({
  success: z.literal(true),
  status: z.literal('cancelled'),
  warning: z.string().optional().meta({ description: 'When the trainer is still stopping: what happens until it has' }),
});
