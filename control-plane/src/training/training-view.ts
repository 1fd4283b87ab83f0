import { gpuDisplayName, gpuMemoryGb } from '@vp/protocol';
import type { z } from 'zod';
import type { Job } from '../jobs/job.entity.ts';
import type { EpochRow } from './epoch-history.ts';
import type { TrainingPayload } from './training-payload.ts';
import type { TrainingRun } from './training-run.entity.ts';
import type { TrainingJobView, TRAINING_STATUSES } from './training.schemas.ts';

type Status = (typeof TRAINING_STATUSES)[number];
type View = z.input<typeof TrainingJobView>;

/** The job's status as a user sees training: waiting, on a host but not yet reporting, then the run's own. */
function statusOf(job: Job | null, run: TrainingRun | null): Status {
  if (job && job.status !== 'running') return job.status === 'queued' ? 'pending' : job.status;
  if (!run) return job?.status === 'running' ? 'starting' : 'pending';
  return run.status;
}

function computeOf(job: Job, run: TrainingRun | null, payload: TrainingPayload | undefined): View['compute'] {
  const gpuType = payload?.gpuType ?? 'cpu';
  return {
    gpuType,
    gpuDisplayName: gpuDisplayName(gpuType),
    gpuMemoryGb: gpuMemoryGb(gpuType) ?? 0,
    gpuCount: job.gpuCount,
    host: job.host?.name ?? null,
    device: run?.device ?? null,
    attempts: job.attempts,
    jobStatus: job.status,
  };
}

/** GET .../training: the platform job (and its newest run), or a run on the user's own machine. */
export function trainingView(job: Job | null, run: TrainingRun | null, epochs: EpochRow[], console: string[]): View {
  const payload = job?.payload as TrainingPayload | undefined;
  const started = run?.createdAt ?? job?.startedAt ?? null;
  // The run's own end (the trainer's training_complete) when it reported one: its job ends later (the trainer's
  // process exits after it, or its host reports the exit only on reconnecting), and the end shown must not move.
  const ended = run?.completedAt ?? job?.finishedAt ?? null;
  const elapsedMs = started ? (ended ?? new Date()).getTime() - started.getTime() : 0;
  const done = run?.epochsDone ?? 0;
  const total = run?.epochs ?? payload?.trainArgs.epochs ?? 0;
  const timePerEpochMs = done > 0 ? Math.round(elapsedMs / done) : 0;
  const status = statusOf(job, run);
  const active = status === 'pending' || status === 'starting' || status === 'running';
  // Only a failure has an error: a cancelled job's 'Cancelled' says no more than its status.
  const error = status === 'failed' ? (job?.error ?? run?.error ?? 'Training failed') : null;
  const last = epochs.at(-1);
  return {
    id: job?.id ?? `run-${run!.id}`,
    status,
    source: job ? 'platform' : 'own-compute',
    runId: run?.id ?? null,
    progress: {
      currentEpoch: done,
      totalEpochs: total,
      percentage: total ? Math.round((1000 * done) / total) / 10 : 0,
      ...(started && { startedAt: started.toISOString() }),
      ...(ended && { completedAt: ended.toISOString() }),
    },
    timing: { elapsedMs, timePerEpochMs, etaMs: active && total ? timePerEpochMs * Math.max(0, total - done) : 0 },
    compute: job ? computeOf(job, run, payload) : null,
    trainArgs: (payload?.trainArgs as Record<string, unknown> | undefined) ?? run?.trainArgs ?? null,
    epochMetrics: last ? last.metrics : null,
    history: epochs.map((row) => ({
      epoch: row.epoch,
      metrics: row.metrics,
      system: row.system,
      fitness: row.fitness,
      bestFitness: row.best_fitness,
      at: new Date(row.at).toISOString(),
    })),
    console,
    datasetVersion: payload?.datasetVersion ?? null,
    estimatedCostCents: payload?.estimatedCostCents ?? null,
    error: error ? { message: error, timestamp: (ended ?? new Date()).toISOString() } : null,
    createdAt: (job?.createdAt ?? run!.createdAt).toISOString(),
    updatedAt: [job?.updatedAt, run?.updatedAt]
      .reduce<Date>((latest, at) => (at && at > latest ? at : latest), new Date(0))
      .toISOString(),
  };
}
