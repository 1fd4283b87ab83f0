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
  captureDatasetVersion: z.boolean().default(false).meta({ description: 'Save the dataset as a version first and train on exactly that version' }),
});

export const TrainingStarted = z.object({
  modelId: ObjectId,
  jobId: ObjectId,
  status: z.literal('starting'),
  gpuType: z.string(),
  estimatedCost: z.object({ pricePerHour: z.number(), gpuMemoryGb: z.number().nullable() }),
  billing: z.object({ estimatedCostCents: z.number().int(), estimatedCostDisplay: z.string(), balanceCents: z.number().int() }),
  datasetVersion: z.number().int().optional().meta({ description: 'With captureDatasetVersion: the version trained on' }),
});

export const CONSOLE_TAIL_LINES = 200;

export const TRAINING_STATUSES = ['queued', 'starting', 'running', 'completed', 'failed', 'cancelled'] as const;

export const EpochRecord = z.object({
  epoch: z.number().int().meta({ description: '0-based' }),
  metrics: z.record(z.string(), z.unknown()),
  system: z.record(z.string(), z.unknown()).nullable().meta({ description: 'Host stats at the epoch end: cpu, ram, disk, network, per-GPU usage, memory, temperature and power' }),
  fitness: z.number().nullable(),
  bestFitness: z.number().nullable(),
  at: z.iso.datetime(),
});

export const TrainingJobView = z.object({
  id: z.string().meta({ description: 'The job id (GET /api/jobs/{id}, logs at /api/jobs/{id}/logs); for a run on your own machine, run-<runId>' }),
  status: z.enum(TRAINING_STATUSES).meta({ description: 'queued (waiting for a GPU), starting (on a host, before the first report), running, completed, failed, cancelled' }),
  source: z.enum(['platform', 'own-compute']),
  runId: z.number().int().nullable(),
  progress: z.object({ epoch: z.number().int().meta({ description: 'Epochs finished' }), epochs: z.number().int().nullable(), percent: z.number() }),
  timing: z.object({
    createdAt: z.iso.datetime(),
    startedAt: z.iso.datetime().nullable(),
    completedAt: z.iso.datetime().nullable(),
    elapsedSeconds: z.number().nullable(),
    secondsPerEpoch: z.number().nullable(),
    etaSeconds: z.number().nullable(),
  }),
  compute: z.object({
    gpuType: z.string().nullable(),
    gpuCount: z.number().int(),
    host: z.string().nullable(),
    device: z.string().nullable(),
    attempts: z.number().int(),
    jobStatus: z.enum(JOB_STATUSES).nullable(),
  }),
  trainArgs: z.record(z.string(), z.unknown()).nullable(),
  epochMetrics: z.array(EpochRecord),
  console: z.array(z.string()).meta({ description: `The trainer's last console lines (at most ${CONSOLE_TAIL_LINES}), as it streamed them` }),
  datasetVersion: z.number().int().nullable(),
  estimatedCostCents: z.number().int().nullable(),
  error: z.string().nullable().meta({ description: 'Why it failed, without internals' }),
});
export const ModelTraining = z.object({ job: TrainingJobView.nullable() });
export const TrainingCancelled = z.object({ success: z.literal(true), status: z.enum(['cancelled', 'cancelling']) });
