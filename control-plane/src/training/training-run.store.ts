// The training_runs table, with the rows that hang off a run (training_epochs, training_console) where this module
// reads them. A run's status is training/run-status.ts's alone (the run lifecycle: RUN_TRANSITIONS and its guarded
// UPDATEs); nothing here changes a status. Runs are created, and their epochs and console written, by the trainer's
// webhooks (webhooks/training-events.service.ts: the run through the ORM, its epochs and console through
// recordEpoch and recordConsoleChunk here).
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** An epoch a trainer reported (training_epochs), as SQL returns it. */
export interface EpochRow {
  epoch: number;
  metrics: Record<string, unknown>;
  system: Record<string, unknown> | null;
  fitness: number | null;
  best_fitness: number | null;
  at: string | Date;
}

/**
 * SQL on a job alias j: the trainer of job j reported training_complete (its weights are in). A lost attempt is then
 * complete, never trained again (TrainingJob.completedWhen, used in the job lifecycle's release).
 */
export const JOB_RUN_COMPLETED = `exists (select 1 from training_runs r where r.job_id = j.id and r.status = 'completed')`;
/** SQL on a job alias j: when its trainer reported training_complete (TrainingJob.completedAt). */
export const JOB_RUN_COMPLETED_AT = `(select max(r.completed_at) from training_runs r where r.job_id = j.id and r.status = 'completed')`;

/** The checkpoint the job's newest run left to resume from (an earlier attempt's host was lost after uploading it). */
export async function latestResumeKey(em: EntityManager, jobId: string): Promise<{ resume_key: string } | undefined> {
  const [resume] = await query<{ resume_key: string }>(
    em,
    'select resume_key from training_runs where job_id = ? and resume_key is not null order by id desc limit 1',
    [jobId],
  );
  return resume;
}

/** The most epochs any run of the job finished (0 without runs): what its training is charged for. */
export async function epochsDoneOfJob(em: EntityManager, jobId: string): Promise<{ done: number } | undefined> {
  const [epochs] = await query<{ done: number }>(
    em,
    'select coalesce(max(epochs_done), 0)::int as done from training_runs where job_id = ?',
    [jobId],
  );
  return epochs;
}

/** The model a completed run of the job trained; undefined when none completed. */
export async function completedModelOfJob(em: EntityManager, jobId: string): Promise<{ id: string } | undefined> {
  const [trained] = await query<{ id: string }>(
    em,
    `select model_id as id from training_runs where job_id = ? and status = 'completed' limit 1`,
    [jobId],
  );
  return trained;
}

/** The job's newest run (a host's checkpoint upload lands on it); undefined before its trainer reported its start. */
export async function newestRunOfJob(em: EntityManager, jobId: string): Promise<{ id: string } | undefined> {
  const [run] = await query<{ id: string }>(
    em,
    'select id from training_runs where job_id = ? order by id desc limit 1',
    [jobId],
  );
  return run;
}

/** Records the checkpoint a requeued attempt resumes from. */
export async function setResumeKey(em: EntityManager, runId: string, key: string): Promise<void> {
  await query(em, 'update training_runs set resume_key = ?, updated_at = now() where id = ?', [key, runId]);
}

/**
 * Asks the model's running runs on its users' own machines to stop (their next webhook answer says so); answers
 * them, each with whether it was already silent past `cancelGraceSeconds`.
 */
export function requestOwnComputeCancel(
  em: EntityManager,
  modelId: string,
  cancelGraceSeconds: number,
): Promise<Array<{ id: number; silent: boolean }>> {
  return query<{ id: number; silent: boolean }>(
    em,
    `update training_runs set cancel_requested = true, updated_at = now() where model_id = ? and status = 'running' and job_id is null
         returning id, last_report_at < now() - make_interval(secs => ?) as silent`,
    [modelId, cancelGraceSeconds],
  );
}

/**
 * Up to `batch` running runs on users' own machines not heard of for `silenceSeconds` (or, asked to cancel, for
 * `cancelGraceSeconds`), locked with SKIP LOCKED (a run a webhook is writing to is skipped: it is alive).
 */
export function lockSilentOwnComputeRuns(
  em: EntityManager,
  silenceSeconds: number,
  cancelGraceSeconds: number,
  batch: number,
): Promise<Array<{ id: number; cancel_requested: boolean }>> {
  return query<{ id: number; cancel_requested: boolean }>(
    em,
    `select id, cancel_requested from training_runs
         where status = 'running' and job_id is null
           and (last_report_at < now() - make_interval(secs => ?) or (cancel_requested and last_report_at < now() - make_interval(secs => ?)))
         order by id limit ${batch} for update skip locked`,
    [silenceSeconds, cancelGraceSeconds],
  );
}

/**
 * Every epoch a training reported, in order: of all the job's runs (the newest report of an epoch winning), or of one
 * run (see epochHistory).
 */
export function epochRows(em: EntityManager, of: { jobId: string } | { runId: number }): Promise<EpochRow[]> {
  const runs = 'jobId' in of ? 'select id from training_runs where job_id = ?' : 'select ?::bigint';
  return query<EpochRow>(
    em,
    `select distinct on (e.epoch) e.epoch, e.metrics, e.system, e.fitness, e.best_fitness, e.at from training_epochs e
     where e.run_id in (${runs}) order by e.epoch, e.run_id desc`,
    ['jobId' in of ? of.jobId : of.runId],
  );
}

/** How many distinct epochs the runs of each of `modelIds` reported (models without any are left out). */
export function reportedEpochCounts(
  em: EntityManager,
  modelIds: string[],
): Promise<Array<{ model_id: string; epochs: string }>> {
  return query<{ model_id: string; epochs: string }>(
    em,
    'select r.model_id, count(distinct e.epoch) as epochs from training_runs r join training_epochs e on e.run_id = r.id where r.model_id = any(?::text[]) group by r.model_id',
    [pgArray(modelIds)],
  );
}

/** The run's newest 50 console chunks, newest first. */
export function newestConsoleChunks(em: EntityManager, runId: number): Promise<Array<{ content: string }>> {
  return query<{ content: string }>(
    em,
    'select content from training_console where run_id = ? order by chunk_id desc limit 50',
    [runId],
  );
}

/** A console_output chunk of the run; a chunk sent again (a retried post) is kept once. */
export async function recordConsoleChunk(
  em: EntityManager,
  runId: number,
  chunkId: number,
  content: string,
  lineCount: number,
): Promise<void> {
  await query(
    em,
    `insert into training_console (run_id, chunk_id, content, line_count, at) values (?, ?, ?, ?, now()) on conflict (run_id, chunk_id) do nothing`,
    [runId, chunkId, content, lineCount],
  );
}

/** An epoch_end of the run; the epoch reported again replaces its metrics. */
export async function recordEpoch(
  em: EntityManager,
  runId: number,
  epoch: number,
  report: {
    metrics: Record<string, unknown>;
    system: Record<string, unknown>;
    fitness: number | null;
    bestFitness: number | null;
  },
): Promise<void> {
  await query(
    em,
    `insert into training_epochs (run_id, epoch, metrics, system, fitness, best_fitness, at) values (?, ?, ?::jsonb, ?::jsonb, ?, ?, now())
       on conflict (run_id, epoch) do update set metrics = excluded.metrics, system = excluded.system, fitness = excluded.fitness, best_fitness = excluded.best_fitness`,
    [runId, epoch, JSON.stringify(report.metrics), JSON.stringify(report.system), report.fitness, report.bestFitness],
  );
}
