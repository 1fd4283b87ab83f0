import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { JobProgress, JobStatus } from '../jobs/job.entity.ts';

export const BATCH_PREDICT_JOB = 'batch-predict';

/** What POST checked and decided, for the job: an auto-annotation run (runs queued before blur existed name no operation). */
export interface BatchPredictPayload {
  operation?: 'annotate';
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

/** What POST checked and decided for a face blur run (faces/batch-blur.ts). */
export interface BatchBlurPayload {
  operation: 'blur';
  datasetId: string;
  /** Detector score a face needs, and the face boxes' scale around their centres. */
  confidence: number;
  boxScale: number;
  /** Only this image of the dataset; null: every image (at most PREVIEW_IMAGES for a preview). */
  imageId: string | null;
  preview: boolean;
  /** The preview whose prepared images this run applies. */
  previewJobId: string | null;
  /** Images to process when it was admitted. */
  total: number;
}

export type BatchRunPayload = BatchPredictPayload | BatchBlurPayload;

/** A preview's image: what its blur prepared (stored, not yet the image's), or null where it found no face. */
export interface PreviewImage {
  imageId: string;
  name: string;
  /** The image's bytes when previewed: the prepared file applies only to those. */
  hash: string;
  ext: string;
  faces: number;
  blurred: { hash: string; ext: string; bytes: number; channels: number } | null;
}

/** A blur run's state in jobs.progress, written after each image (faces/batch-blur.ts). */
export interface BlurProgress extends JobProgress {
  processed: number;
  total: number;
  faces: number;
  /** Images whose bytes were replaced (a preview: prepared). */
  blurred: number;
  skipped: number;
  lastImageId: string | null;
  previews: PreviewImage[];
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
  payload: BatchRunPayload;
  progress: Partial<BatchProgress & BlurProgress> | null;
  result: { appliedBy?: string; discarded?: boolean } | null;
  error: string | null;
  cancel_requested: boolean;
  started_at: Date | null;
  created_at: Date;
  charged_cents: string | null;
}

const RUN_COLUMNS = `j.id, j.status, j.payload, j.progress, j.result, j.error, j.cancel_requested, j.started_at, j.created_at,
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
  await query(
    em,
    `update jobs set result = coalesce(result, '{}'::jsonb) || '{"dismissed": true}'::jsonb, updated_at = now() where id = ?`,
    [jobId],
  );
}

/** One of the dataset's runs, any state. */
export async function runOf(em: EntityManager, datasetId: string, jobId: string): Promise<BatchRunRow | undefined> {
  const [row] = await query<BatchRunRow>(
    em,
    `select ${RUN_COLUMNS} from jobs j where j.kind = ? and j.subject_id = ? and j.id = ?`,
    [BATCH_PREDICT_JOB, datasetId, jobId],
  );
  return row;
}

/**
 * Marks a finished preview applied by the run `appliedBy` (in the transaction that queues it) unless it was applied or
 * discarded before; returns whether it was marked.
 */
export async function markPreviewApplied(tx: EntityManager, previewJobId: string, appliedBy: string): Promise<boolean> {
  const rows = await query(
    tx,
    `update jobs set result = coalesce(result, '{}'::jsonb) || jsonb_build_object('appliedBy', ?::text), updated_at = now()
     where id = ? and status = 'completed' and result->>'appliedBy' is null and result->>'discarded' is null returning id`,
    [appliedBy, previewJobId],
  );
  return rows.length > 0;
}

/** Marks a preview discarded and dismissed unless it was applied; returns whether it was marked. */
export async function markPreviewDiscarded(em: EntityManager, previewJobId: string): Promise<boolean> {
  const rows = await query(
    em,
    `update jobs set result = coalesce(result, '{}'::jsonb) || '{"discarded": true, "dismissed": true}'::jsonb, updated_at = now()
     where id = ? and (result is null or result->>'appliedBy' is null) returning id`,
    [previewJobId],
  );
  return rows.length > 0;
}

/** The run's state as last committed (see BatchProgress, BlurProgress). */
export async function readProgress<P extends JobProgress = BatchProgress>(
  em: EntityManager,
  jobId: string,
): Promise<Partial<P>> {
  const [row] = await query<{ progress: Partial<P> | null }>(em, 'select progress from jobs where id = ?', [jobId]);
  return row?.progress ?? {};
}

/** Writes the run's state in the transaction `tx` that also saves its labels (the caller confirmed it holds the job). */
export async function writeProgress(
  tx: EntityManager,
  jobId: string,
  progress: BatchProgress | BlurProgress,
): Promise<void> {
  await query(tx, 'update jobs set progress = ?::jsonb, updated_at = now() where id = ?', [
    JSON.stringify(progress),
    jobId,
  ]);
}
