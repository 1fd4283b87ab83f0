import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { JobProgress, JobStatus } from '../jobs/job.entity.ts';

export const BATCH_PREDICT_JOB = 'batch-predict';

/** What POST checked and decided, for the job. */
export interface BatchPredictPayload {
  datasetId: string;
  /** The model's id, and the modelId the request named it by (shown back). */
  modelId: string;
  modelRef: string;
  confidence: number;
  iou: number;
  includeAnnotated: boolean;
  classMapping: Array<number | null> | null;
  /** Resolved at admission when the model recorded its class names; else from its export at the first image. */
  classMap: Array<number | null> | null;
  /** The price when the run was admitted, which is what it is charged. */
  centsPerImage: number;
  /** Images to label when it was admitted (the progress total until the run counts its own). */
  total: number;
}

/**
 * The run's state, kept in jobs.progress and written in the same transaction as each image's labels, so it always says
 * exactly which images were done: a run taken again after its process died resumes after lastImageId, and what a run
 * is charged is `processed`, whichever way it ended.
 */
export interface BatchProgress extends JobProgress {
  processed: number;
  total: number;
  annotations: number;
  classIds: number[];
  lastImageId: string | null;
  datasetVersion: number | null;
  /** Images whose predictions could not be saved (the labels would break a rule, such as the 10,000 cap). */
  skipped: number;
}

export interface BatchRunRow {
  id: string;
  status: JobStatus;
  payload: BatchPredictPayload;
  progress: Partial<BatchProgress> | null;
  error: string | null;
  cancel_requested: boolean;
  started_at: Date | null;
  created_at: Date;
  charged_cents: string | null;
}

const RUN_COLUMNS = `j.id, j.status, j.payload, j.progress, j.error, j.cancel_requested, j.started_at, j.created_at,
  (select -t.amount_cents from credit_transactions t where t.job_id = j.id and t.kind = 'charge') as charged_cents`;

/** The dataset's queued or running run. */
export async function activeRun(em: EntityManager, datasetId: string): Promise<BatchRunRow | undefined> {
  const [row] = await query<BatchRunRow>(
    em,
    `select ${RUN_COLUMNS} from jobs j where j.kind = ? and j.subject_id = ? and j.status in ('queued', 'running') order by j.created_at desc limit 1`,
    [BATCH_PREDICT_JOB, datasetId],
  );
  return row;
}

/** The dataset's finished runs nobody dismissed, newest first. */
export function undismissedRuns(em: EntityManager, datasetId: string): Promise<BatchRunRow[]> {
  return query<BatchRunRow>(
    em,
    `select ${RUN_COLUMNS} from jobs j where j.kind = ? and j.subject_id = ? and j.status in ('completed', 'failed', 'cancelled')
       and not coalesce((j.result->>'dismissed')::boolean, false) order by j.finished_at desc, j.id desc`,
    [BATCH_PREDICT_JOB, datasetId],
  );
}

/**
 * Hides a finished run's summary. Kept in its result (a flag beside what it produced, not a status: the run stays as
 * it ended).
 */
export async function dismissRun(em: EntityManager, jobId: string): Promise<void> {
  await query(em, `update jobs set result = coalesce(result, '{}'::jsonb) || '{"dismissed": true}'::jsonb, updated_at = now() where id = ?`, [jobId]);
}

/** The run's state as last committed (see BatchProgress). */
export async function readProgress(em: EntityManager, jobId: string): Promise<Partial<BatchProgress>> {
  const [row] = await query<{ progress: Partial<BatchProgress> | null }>(em, 'select progress from jobs where id = ?', [jobId]);
  return row?.progress ?? {};
}

/** Writes the run's state in the transaction `tx` that also saves its labels (the caller confirmed it holds the job). */
export async function writeProgress(tx: EntityManager, jobId: string, progress: BatchProgress): Promise<void> {
  await query(tx, 'update jobs set progress = ?::jsonb, updated_at = now() where id = ?', [JSON.stringify(progress), jobId]);
}
