import type { z } from 'zod';
import type { Job } from '../jobs/job.entity.ts';
import type { TrainingPayload } from './training-payload.ts';
import type { TrainingRun } from './training-run.entity.ts';
import type { TrainingJobView, TRAINING_STATUSES } from './training.schemas.ts';

export interface EpochRow {
  epoch: number;
  metrics: Record<string, unknown>;
  system: Record<string, unknown> | null;
  fitness: number | null;
  best_fitness: number | null;
  at: string | Date;
}

type Status = (typeof TRAINING_STATUSES)[number];
const iso = (value: Date | string | null | undefined) => (value ? new Date(value).toISOString() : null);

/** The job's status as a user sees training: waiting, on a host but not yet reporting, then the run's own. */
function statusOf(job: Job | null, run: TrainingRun | null): Status {
  if (job && job.status !== 'running') return job.status === 'queued' ? 'queued' : job.status;
  if (!run) return job?.status === 'running' ? 'starting' : 'queued';
  return run.status;
}

/** GET .../training: the platform job (and its newest run), or a run on the user's own machine. */
export function trainingView(job: Job | null, run: TrainingRun | null, epochs: EpochRow[], console: string[]): z.input<typeof TrainingJobView> {
  const payload = job?.payload as TrainingPayload | undefined;
  const started = run?.createdAt ?? job?.startedAt ?? null;
  const ended = job?.finishedAt ?? run?.completedAt ?? null;
  const elapsedSeconds = started ? Math.round(((ended ?? new Date()).getTime() - started.getTime()) / 1000) : null;
  const done = run?.epochsDone ?? 0;
  const total = run?.epochs ?? payload?.trainArgs.epochs ?? null;
  const secondsPerEpoch = elapsedSeconds !== null && done > 0 ? Math.round((elapsedSeconds / done) * 10) / 10 : null;
  const status = statusOf(job, run);
  const active = status === 'queued' || status === 'starting' || status === 'running';
  return {
    id: job?.id ?? `run-${run!.id}`,
    status,
    source: job ? 'platform' : 'own-compute',
    runId: run?.id ?? null,
    progress: { epoch: done, epochs: total, percent: total ? Math.round((1000 * done) / total) / 10 : 0 },
    timing: {
      createdAt: (job?.createdAt ?? run!.createdAt).toISOString(),
      startedAt: iso(started),
      completedAt: iso(ended),
      elapsedSeconds,
      secondsPerEpoch,
      etaSeconds: active && secondsPerEpoch !== null && total ? Math.round(secondsPerEpoch * Math.max(0, total - done)) : null,
    },
    compute: {
      gpuType: payload?.gpuType ?? null,
      gpuCount: job?.gpuCount ?? 0,
      host: job?.host?.name ?? null,
      device: run?.device ?? null,
      attempts: job?.attempts ?? 1,
      jobStatus: job?.status ?? null,
    },
    trainArgs: (payload?.trainArgs as Record<string, unknown> | undefined) ?? run?.trainArgs ?? null,
    epochMetrics: epochs.map((row) => ({
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
    error: job?.error ?? run?.error ?? null,
  };
}
