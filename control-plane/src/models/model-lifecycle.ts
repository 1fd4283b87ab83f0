// The model status machine: every statement that changes a model's status is here (MODEL_MOVES lists the moves, by
// what makes them). Each is one guarded UPDATE … WHERE status = any(<the move's from>) RETURNING in the caller's
// transaction, so of two writers racing for one model, the one that comes second finds it moved and changes nothing.
// The moves are today's behaviour, not a stricter one: an owner may record any status (clients record trainings
// they run themselves), and a training may start whatever the model shows; only a training's end is guarded by it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';
import { TRAINING_JOB } from '../training/training-payload.ts';

/** A model's status as the record keeps it (clients read starting and running as training, untrained as pending). */
export const MODEL_STATUSES = ['pending', 'training', 'completed', 'failed', 'cancelled'] as const;
export type ModelStatus = (typeof MODEL_STATUSES)[number];

export const TRAINING_OUTCOMES = ['completed', 'failed', 'cancelled'] as const satisfies readonly ModelStatus[];
export type TrainingOutcome = (typeof TRAINING_OUTCOMES)[number];

/** How a model's training ended. */
export interface TrainingEnd {
  outcome: TrainingOutcome;
  /** Why it failed (the model's trainingError); null for the other outcomes. */
  error: string | null;
}

interface Move {
  from: readonly ModelStatus[];
  to: readonly ModelStatus[];
}

/**
 * The moves a model's status makes, by what makes them. A model is created pending, or with its source's status
 * when cloned (a project clone takes only completed models).
 *
 * - record: the owner's PATCH sets any status (recordStatus).
 * - startTraining: a training is queued (POST /api/training/start, once no training job is active for the model) or
 *   a trainer reports training_started: whatever the model was, it is training.
 * - endTraining: a training job ended, or the run the model trains on ended: only a training model takes the outcome.
 * - reportTrainingEnd: a trainer's training_complete is its last word on its run: the model takes it (completed, or
 *   cancelled after a cancel) whatever it shows, while that run is still the model's newest training.
 */
export const MODEL_MOVES = {
  record: { from: MODEL_STATUSES, to: MODEL_STATUSES },
  startTraining: { from: MODEL_STATUSES, to: ['training'] },
  endTraining: { from: ['training'], to: TRAINING_OUTCOMES },
  reportTrainingEnd: { from: MODEL_STATUSES, to: ['completed', 'cancelled'] },
} as const satisfies Record<string, Move>;
export type ModelMove = keyof typeof MODEL_MOVES;

const movesFrom = (from: ModelStatus): ModelStatus[] =>
  MODEL_STATUSES.filter(
    (to) =>
      to !== from && Object.values(MODEL_MOVES).some((move: Move) => move.from.includes(from) && move.to.includes(to)),
  );

/** Every status a model may go to from each status: the union of MODEL_MOVES (the owner's record makes it every one). */
export const MODEL_TRANSITIONS: Readonly<Record<ModelStatus, readonly ModelStatus[]>> = {
  pending: movesFrom('pending'),
  training: movesFrom('training'),
  completed: movesFrom('completed'),
  failed: movesFrom('failed'),
  cancelled: movesFrom('cancelled'),
};

/** The guard of a move to `to`: its from-statuses as one `?::text[]` parameter. A move the table does not list is a bug. */
function allowedFrom(move: ModelMove, to: ModelStatus): string {
  const allowed: Move = MODEL_MOVES[move];
  if (!allowed.to.includes(to)) throw new Error(`a model's ${move} does not go to ${to}`);
  return pgArray(allowed.from);
}

/**
 * The owner's PATCH: the model takes `status`, whatever it was. A status equal to the current one changes nothing
 * (not even updated_at). Answers whether the status changed.
 */
export async function recordStatus(em: EntityManager, modelId: string, status: ModelStatus): Promise<boolean> {
  const moved = await query(
    em,
    'update models set status = ?, updated_at = now() where id = ? and status = any(?::text[]) and status <> ? returning id',
    [status, modelId, allowedFrom('record', status), status],
  );
  return moved.length > 0;
}

/** What a training start records on its model besides its status (its error and completion time are cleared). */
export interface TrainingStart {
  trainArgs: Record<string, unknown> | null;
  /** A training this platform queued: the dataset it trains on. */
  dataset?: { id: string; slug: string };
  /** A trainer's training_started: when it began, and the epochs it was set to run (null keeps the model's). */
  startedAt?: Date;
  epochs?: number | null;
}

/** A training starts on the model, whatever it was (the caller made sure no other is active). False: no such model. */
export async function startTraining(em: EntityManager, modelId: string, start: TrainingStart): Promise<boolean> {
  const sets = ['train_args = ?::jsonb'];
  const params: unknown[] = [start.trainArgs === null ? null : JSON.stringify(start.trainArgs)];
  if (start.dataset) {
    sets.push('dataset_id = ?', 'dataset_slug = ?');
    params.push(start.dataset.id, start.dataset.slug);
  }
  if (start.startedAt) {
    sets.push('started_at = ?');
    params.push(start.startedAt);
  }
  if (start.epochs !== undefined) {
    sets.push('epochs = coalesce(?::int, epochs)');
    params.push(start.epochs);
  }
  const moved = await query(
    em,
    `update models set status = 'training', training_error = null, completed_at = null, ${sets.join(', ')}, updated_at = now()
     where id = ? and status = any(?::text[]) returning id`,
    [...params, modelId, allowedFrom('startTraining', 'training')],
  );
  return moved.length > 0;
}

/** A training job ended: its model, if still training (no run reported the end), takes `end`. */
export async function endTrainingOfJob(em: EntityManager, modelId: string, end: TrainingEnd): Promise<boolean> {
  const moved = await query(
    em,
    'update models set status = ?, training_error = ?, completed_at = now(), updated_at = now() where id = ? and status = any(?::text[]) returning id',
    [end.outcome, end.error, modelId, allowedFrom('endTraining', end.outcome)],
  );
  return moved.length > 0;
}

/**
 * A model follows a run only while that run is its training: no newer run on the model and no other active
 * training job for it, so a run that ends late never overwrites a training started since.
 */
const MODEL_ON_RUN = `m.id = ? and not exists (select 1 from training_runs newer where newer.model_id = m.id and newer.id > ?)
  and not exists (select 1 from jobs j where j.subject_id = m.id and j.kind = '${TRAINING_JOB}' and j.status in ('queued', 'running') and j.id is distinct from ?)`;

/** A training run that ended: its id, its model, and the job it ran in (null: the user's own machine). */
export interface EndedRun {
  id: number;
  modelId: string;
  jobId: string | null;
}

/**
 * A run ended, and the model takes its end while that run is its training: only while the model is training
 * (`onlyWhileTraining`: endTraining), or whatever it shows (a trainer's training_complete: reportTrainingEnd).
 * completed_at stays when the status does not change (a trainer repeating its training_complete). Answers whether
 * the model took it.
 */
export async function endTrainingOfRun(
  em: EntityManager,
  run: EndedRun,
  end: TrainingEnd,
  onlyWhileTraining: boolean,
): Promise<boolean> {
  const moved = await query(
    em,
    `update models m set status = ?, training_error = ?, completed_at = case when m.status = ? then m.completed_at else now() end, updated_at = now()
     where ${MODEL_ON_RUN} and m.status = any(?::text[]) returning m.id`,
    [
      end.outcome,
      end.error,
      end.outcome,
      run.modelId,
      run.id,
      run.jobId,
      allowedFrom(onlyWhileTraining ? 'endTraining' : 'reportTrainingEnd', end.outcome),
    ],
  );
  return moved.length > 0;
}
