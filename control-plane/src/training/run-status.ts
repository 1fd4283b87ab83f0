// How a training run ends, and its model with it: the only writer of a run's terminal status. Every change is a
// guarded UPDATE in the caller's transaction, so a webhook, the silence sweep of any replica, a cancel and a job's
// end racing for one run cannot both win: whichever updates first ends it, the others find it ended.
// This is the run lifecycle: RUN_TRANSITIONS lists the moves a run's status may make, and every statement that changes
// it is here (a guarded UPDATE … WHERE status in (allowed from) RETURNING), so this module is also the store for a
// run's status; the rest of training_runs is training-run.store.ts's. (The models statements here follow the run; they
// belong to the models store once there is one.)
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { endTrainingOfJob, endTrainingOfRun } from '../models/model-lifecycle.ts';
import type { RunStatus } from './training-run.entity.ts';

export type RunOutcome = Exclude<RunStatus, 'running'>;

/**
 * The moves a run's status may make (a run is created running by the trainer's training_started). A move to the
 * status a run already has is a repeat (the trainer's training_complete sent twice): it keeps its completed_at.
 *
 * - running → completed | failed | cancelled: its trainer reported its end, it went silent (failed; cancelled when a
 *   cancel was asked), a user cancelled it while it was silent, or its training job ended.
 * - failed → completed | cancelled: a run taken for dead whose trainer was only slow reports training_complete
 *   (cancelled when a cancel had been asked).
 * - completed → completed, cancelled → cancelled: a repeated training_complete.
 */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  running: ['completed', 'failed', 'cancelled'],
  failed: ['completed', 'cancelled'],
  completed: ['completed'],
  cancelled: ['cancelled'],
};

/** The statuses of `from` from which a run may move to `to` (RUN_TRANSITIONS). */
export function allowedFrom(to: RunStatus, from: readonly RunStatus[]): RunStatus[] {
  return from.filter((status) => RUN_TRANSITIONS[status].includes(to));
}

export interface RunEnd {
  outcome: RunOutcome;
  /** Why it failed (shown on the run and as the model's trainingError); null for the other outcomes. */
  error: string | null;
}

interface EndedRow {
  id: number;
  model_id: string;
  job_id: string | null;
}

// completed_at stays when the status does not change (a trainer repeating its training_complete).
async function setRun(
  em: EntityManager,
  runId: number,
  end: RunEnd,
  wanted: readonly RunStatus[],
): Promise<EndedRow | undefined> {
  const from = allowedFrom(end.outcome, wanted);
  if (from.length === 0) return undefined;
  const [row] = await query<EndedRow>(
    em,
    `update training_runs set status = ?, error = ?, completed_at = case when status = ? then completed_at else now() end, updated_at = now()
     where id = ? and status in (${from.map(() => '?').join(', ')}) returning id, model_id, job_id`,
    [end.outcome, end.error, end.outcome, runId, ...from],
  );
  return row;
}

/** The run's model takes its end through the model's lifecycle, while that run is its training. */
function setModelOfRun(em: EntityManager, run: EndedRow, end: RunEnd, onlyWhileTraining: boolean): Promise<boolean> {
  return endTrainingOfRun(em, { id: run.id, modelId: run.model_id, jobId: run.job_id }, end, onlyWhileTraining);
}

/** A running run ends (a run already ended never changes), and its model with it when still training on it. */
export async function endRun(em: EntityManager, runId: number, end: RunEnd): Promise<boolean> {
  const run = await setRun(em, runId, end, ['running']);
  if (!run) return false;
  await setModelOfRun(em, run, end, true);
  return true;
}

/**
 * The trainer's own training_complete: its last word on the run, so it also ends a run that was taken for dead
 * (failed after its silence) — a trainer that was only slow still lands its weights and results, and its model
 * shows them when no training began on it since. A run that was cancelled stays cancelled (the trainer sends its
 * partial results after a cancel; `outcome` is then 'cancelled'). Answers whether the model is on this run, i.e.
 * whether the results belong on the model.
 */
export async function endReportedRun(
  em: EntityManager,
  runId: number,
  outcome: 'completed' | 'cancelled',
): Promise<boolean> {
  const end = { outcome, error: null };
  const run = await setRun(
    em,
    runId,
    end,
    outcome === 'completed' ? ['running', 'failed', 'completed'] : ['running', 'failed', 'cancelled'],
  );
  if (!run) return false;
  return setModelOfRun(em, run, end, false);
}

/** A training job ended: its runs still running take its outcome (the model is ended by endJobModel). */
export async function endJobRuns(em: EntityManager, jobId: string, outcome: RunOutcome): Promise<void> {
  if (allowedFrom(outcome, ['running']).length === 0) return;
  await query(
    em,
    `update training_runs set status = ?, completed_at = now(), updated_at = now() where job_id = ? and status = 'running'`,
    [outcome, jobId],
  );
}

/** A training job ended: its model, if still training (no run reported the end), takes `end`. */
export async function endJobModel(em: EntityManager, modelId: string, end: RunEnd): Promise<void> {
  await endTrainingOfJob(em, modelId, end);
}
