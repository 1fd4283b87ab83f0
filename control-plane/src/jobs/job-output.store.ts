import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** A file a host job left behind (JobSpec.outputs), uploaded by its agent before it reported the job completed. */
export interface JobOutput {
  jobId: string;
  name: string;
  attempt: number;
  storageKey: string;
  size: number;
  sha256: string;
}

interface JobOutputRow {
  job_id: string;
  name: string;
  attempt: number;
  storage_key: string;
  size: string;
  sha256: string;
}

const fromRow = (row: JobOutputRow): JobOutput => ({
  jobId: row.job_id,
  name: row.name,
  attempt: row.attempt,
  storageKey: row.storage_key,
  size: Number(row.size),
  sha256: row.sha256,
});

/** Records an upload; a later attempt's upload of the same name replaces an earlier one. Returns the key it replaced. */
export async function recordJobOutput(em: EntityManager, output: JobOutput): Promise<string | null> {
  const [previous] = await query<{ storage_key: string }>(
    em,
    'select storage_key from job_outputs where job_id = ? and name = ? for update',
    [output.jobId, output.name],
  );
  await query(
    em,
    `insert into job_outputs (job_id, name, attempt, storage_key, size, sha256) values (?, ?, ?, ?, ?, ?)
     on conflict (job_id, name) do update set attempt = excluded.attempt, storage_key = excluded.storage_key, size = excluded.size,
       sha256 = excluded.sha256, created_at = now()`,
    [output.jobId, output.name, output.attempt, output.storageKey, output.size, output.sha256],
  );
  return previous && previous.storage_key !== output.storageKey ? previous.storage_key : null;
}

/** Removes the records of a job's outputs (their objects are the caller's to delete). */
export async function deleteJobOutputs(em: EntityManager, jobId: string): Promise<void> {
  await query(em, 'delete from job_outputs where job_id = ?', [jobId]);
}

/** The outputs of a job, by name. */
export async function jobOutputs(em: EntityManager, jobId: string): Promise<JobOutput[]> {
  const rows = await query<JobOutputRow>(
    em,
    'select job_id, name, attempt, storage_key, size, sha256 from job_outputs where job_id = ? order by name',
    [jobId],
  );
  return rows.map(fromRow);
}
