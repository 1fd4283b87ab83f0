import type { EntityManager } from '@mikro-orm/postgresql';
import type { TrainResultRow } from '../models/model.entity.ts';
import { epochRows, type EpochRow } from './training-run.store.ts';

export type { EpochRow };

/**
 * Every epoch a training reported, in order. A platform job resumed on another host has a run per attempt: its
 * epochs are theirs together, the newest report winning; a run on the user's own machine is its own.
 */
export function epochHistory(em: EntityManager, of: { jobId: string } | { runId: number }): Promise<EpochRow[]> {
  return epochRows(em, of);
}

/** The numeric metrics of an epoch (the trainer sends null for non-finite ones). */
export function numericMetrics(metrics: Record<string, unknown>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(metrics).filter((entry): entry is [string, number] => typeof entry[1] === 'number'),
  );
}

/** The model's trainResults: each epoch's metrics, fitness and end. */
export function trainResults(rows: EpochRow[]): TrainResultRow[] {
  return rows.map((row) => ({
    epoch: row.epoch,
    metrics: numericMetrics(row.metrics),
    ...(row.fitness !== null && { fitness: Number(row.fitness) }),
    timestamp: new Date(row.at).toISOString(),
  }));
}
