// The model_exports table. An active export's status is its job's (queued; running before the host accepted it is
// starting); only the job lifecycle changes a job, and the export's own status is written once, when the job ends.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';
import type { ExportFormatId } from './export-formats.ts';
import type { NormalizedArgs } from './export-args.ts';

export const EXPORT_STATUSES = ['queued', 'starting', 'running', 'completed', 'failed', 'cancelled'] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];
export type ExportOutcome = 'completed' | 'failed' | 'cancelled';

export interface ExportRecord {
  id: string;
  workspaceId: string;
  modelId: string;
  jobId: string | null;
  format: ExportFormatId;
  args: NormalizedArgs;
  gpuType: string | null;
  weightsKey: string;
  weightsSha256: string;
  fingerprint: string;
  status: ExportStatus;
  error: string | null;
  fileKey: string | null;
  fileSize: number | null;
  fileSha256: string | null;
  fileName: string | null;
  startedAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An active export reads its job: the export's own status is null until the job ended and was settled. */
const STATUS = `coalesce(e.status, case when j.status = 'queued' then 'queued'
  when j.status = 'running' and j.accepted_at is null then 'starting' else 'running' end)`;
const COLUMNS = `e.id, e.workspace_id, e.model_id, e.job_id, e.format, e.args, e.gpu_type, e.weights_key, e.weights_sha256, e.fingerprint,
  ${STATUS} as status, e.error, e.file_key, e.file_size, e.file_sha256, e.file_name, coalesce(e.started_at, j.started_at) as started_at,
  e.completed_at, e.created_at, greatest(e.updated_at, case when e.status is null then j.updated_at end) as updated_at`;
const FROM = 'model_exports e left join jobs j on j.id = e.job_id';

interface ExportRow {
  id: string;
  workspace_id: string;
  model_id: string;
  job_id: string | null;
  format: ExportFormatId;
  args: NormalizedArgs;
  gpu_type: string | null;
  weights_key: string;
  weights_sha256: string;
  fingerprint: string;
  status: ExportStatus;
  error: string | null;
  file_key: string | null;
  file_size: string | null;
  file_sha256: string | null;
  file_name: string | null;
  started_at: string | Date | null;
  completed_at: string | Date | null;
  created_at: string | Date;
  updated_at: string | Date;
}

/** The driver answers raw timestamps as text. */
const date = (value: string | Date | null): Date | null => (value === null ? null : new Date(value));

const fromRow = (row: ExportRow): ExportRecord => ({
  id: row.id,
  workspaceId: row.workspace_id,
  modelId: row.model_id,
  jobId: row.job_id,
  format: row.format,
  args: row.args,
  gpuType: row.gpu_type,
  weightsKey: row.weights_key,
  weightsSha256: row.weights_sha256,
  fingerprint: row.fingerprint,
  status: row.status,
  error: row.error,
  fileKey: row.file_key,
  fileSize: row.file_size === null ? null : Number(row.file_size),
  fileSha256: row.file_sha256,
  fileName: row.file_name,
  startedAt: date(row.started_at),
  completedAt: date(row.completed_at),
  createdAt: date(row.created_at)!,
  updatedAt: date(row.updated_at)!,
});

export type NewExport = Pick<
  ExportRecord,
  'workspaceId' | 'modelId' | 'format' | 'args' | 'gpuType' | 'weightsKey' | 'weightsSha256' | 'fingerprint'
>;

/** A file an export already has (a reuse of an equal completed export). */
export interface ExportFile {
  key: string;
  size: number;
  sha256: string;
  name: string;
}

/** Inserts a completed export: one made at once from a workspace's equal artifact (`file`). */
export async function insertCompletedExport(em: EntityManager, created: NewExport, file: ExportFile): Promise<string> {
  const id = newId();
  const now = new Date();
  await query(
    em,
    `insert into model_exports (id, workspace_id, model_id, format, args, gpu_type, weights_key, weights_sha256, fingerprint,
       status, file_key, file_size, file_sha256, file_name, started_at, completed_at)
     values (?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, 'completed', ?, ?, ?, ?, ?, ?)`,
    [...newColumns(id, created), file.key, file.size, file.sha256, file.name, now, now],
  );
  return id;
}

/**
 * Inserts an active export (its job is set after it is queued), unless the workspace has an equivalent one in flight
 * (the unique index model_exports_one_in_flight): then nothing is inserted and the answer is undefined. A concurrent
 * insert of the same export waits for the other transaction, so two racing requests never both get one.
 */
export async function insertActiveExport(em: EntityManager, created: NewExport): Promise<string | undefined> {
  const [row] = await query<{ id: string }>(
    em,
    `insert into model_exports (id, workspace_id, model_id, format, args, gpu_type, weights_key, weights_sha256, fingerprint)
     values (?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?)
     on conflict (workspace_id, fingerprint) where status is null do nothing returning id`,
    newColumns(newId(), created),
  );
  return row?.id;
}

const newColumns = (id: string, created: NewExport) => [
  id,
  created.workspaceId,
  created.modelId,
  created.format,
  JSON.stringify(created.args),
  created.gpuType,
  created.weightsKey,
  created.weightsSha256,
  created.fingerprint,
];

export async function setExportJob(em: EntityManager, exportId: string, jobId: string): Promise<void> {
  await query(em, 'update model_exports set job_id = ?, updated_at = now() where id = ?', [jobId, exportId]);
}

export async function listExports(
  em: EntityManager,
  modelId: string,
  options: { status?: ExportStatus; limit: number },
): Promise<ExportRecord[]> {
  const rows = await query<ExportRow>(
    em,
    `select ${COLUMNS} from ${FROM} where e.model_id = ? and (?::text is null or ${STATUS} = ?) order by e.created_at desc, e.id desc limit ?`,
    [modelId, options.status ?? null, options.status ?? null, options.limit],
  );
  return rows.map(fromRow);
}

export async function findExport(
  em: EntityManager,
  modelId: string,
  exportId: string,
): Promise<ExportRecord | undefined> {
  const [row] = await query<ExportRow>(em, `select ${COLUMNS} from ${FROM} where e.model_id = ? and e.id = ?`, [
    modelId,
    exportId,
  ]);
  return row && fromRow(row);
}

/** By id alone: for the export job and mobile links (both checked otherwise). */
export async function exportById(em: EntityManager, exportId: string): Promise<ExportRecord | undefined> {
  const [row] = await query<ExportRow>(em, `select ${COLUMNS} from ${FROM} where e.id = ?`, [exportId]);
  return row && fromRow(row);
}

/** The model's newest export with this fingerprint, or else the workspace's one in flight (a clone's): what a wait follows. */
export async function latestEquivalent(
  em: EntityManager,
  modelId: string,
  workspaceId: string,
  fingerprint: string,
): Promise<ExportRecord | undefined> {
  const [row] = await query<ExportRow>(
    em,
    `select ${COLUMNS} from ${FROM} where e.workspace_id = ? and e.fingerprint = ? and (e.model_id = ? or e.status is null)
     order by (e.model_id = ?) desc, e.created_at desc, e.id desc limit 1`,
    [workspaceId, fingerprint, modelId, modelId],
  );
  return row && fromRow(row);
}

/** The workspace's export with this fingerprint in flight, if any (one at most: the unique index model_exports_one_in_flight). */
export async function inFlightEquivalent(
  em: EntityManager,
  workspaceId: string,
  fingerprint: string,
): Promise<ExportRecord | undefined> {
  const [row] = await query<ExportRow>(
    em,
    `select ${COLUMNS} from ${FROM} where e.workspace_id = ? and e.fingerprint = ? and e.status is null`,
    [workspaceId, fingerprint],
  );
  return row && fromRow(row);
}

/** A completed export of the workspace with the same fingerprint whose file is still there: its artifact is reused. */
export async function completedEquivalent(
  em: EntityManager,
  workspaceId: string,
  fingerprint: string,
): Promise<ExportFile | undefined> {
  const [row] = await query<{ file_key: string; file_size: string; file_sha256: string; file_name: string }>(
    em,
    `select file_key, file_size, file_sha256, file_name from model_exports
     where workspace_id = ? and fingerprint = ? and status = 'completed' and file_key is not null order by completed_at desc limit 1`,
    [workspaceId, fingerprint],
  );
  return row && { key: row.file_key, size: Number(row.file_size), sha256: row.file_sha256, name: row.file_name };
}

/** The file of the workspace's newest completed export of these weights to `format`, whatever its arguments (dynamic ones first). */
export async function completedOfWeights(
  em: EntityManager,
  workspaceId: string,
  weightsSha256: string,
  format: string,
): Promise<string | undefined> {
  const [row] = await query<{ file_key: string }>(
    em,
    `select file_key from model_exports where workspace_id = ? and weights_sha256 = ? and format = ? and status = 'completed' and file_key is not null
     order by coalesce((args->>'dynamic')::boolean, false) desc, completed_at desc limit 1`,
    [workspaceId, weightsSha256, format],
  );
  return row?.file_key;
}

/** settleExport sends an export's id here at its commit (see ExportWaits). */
export const EXPORTS_SETTLED_CHANNEL = 'vp_exports_settled';

/**
 * The end of an export's job, written once (a later settle of the same export changes nothing) and announced on
 * EXPORTS_SETTLED_CHANNEL.
 */
export async function settleExport(
  em: EntityManager,
  exportId: string,
  end: { status: ExportOutcome; error: string | null; file?: ExportFile },
): Promise<void> {
  await query(
    em,
    `with settled as (
       update model_exports e set status = ?, error = ?, file_key = ?, file_size = ?, file_sha256 = ?, file_name = ?,
         started_at = (select j.started_at from jobs j where j.id = e.job_id), completed_at = case when ? = 'completed' then now() end, updated_at = now()
       where e.id = ? and e.status is null
       returning e.id)
     select pg_notify('${EXPORTS_SETTLED_CHANNEL}', id) from settled`,
    [
      end.status,
      end.error,
      end.file?.key ?? null,
      end.file?.size ?? null,
      end.file?.sha256 ?? null,
      end.file?.name ?? null,
      end.status,
      exportId,
    ],
  );
}

/** Deletes finished exports; returns the file keys no export refers to any more (the caller deletes those files). */
export async function deleteExports(em: EntityManager, exportIds: string[]): Promise<string[]> {
  const deleted = await query<{ file_key: string | null }>(
    em,
    'delete from model_exports where id = any(?::text[]) returning file_key',
    [pgArray(exportIds)],
  );
  return unusedFiles(
    em,
    deleted.flatMap((row) => (row.file_key ? [row.file_key] : [])),
  );
}

/** Of `keys`, those no export refers to (serialized per key: two deletions of two sharers see each other). */
export async function unusedFiles(em: EntityManager, keys: string[]): Promise<string[]> {
  const candidates = [...new Set(keys)].sort();
  if (candidates.length === 0) return [];
  await query(em, 'select pg_advisory_xact_lock(hashtextextended(k, 0)) from unnest(?::text[]) k', [
    pgArray(candidates),
  ]);
  const unused = await query<{ key: string }>(
    em,
    'select k as key from unnest(?::text[]) k where not exists (select 1 from model_exports where file_key = k)',
    [pgArray(candidates)],
  );
  return unused.map((row) => row.key);
}

/** The file keys of the exports of these models (taken before their rows cascade away with them). */
export async function exportFilesOf(em: EntityManager, modelIds: string[]): Promise<string[]> {
  const rows = await query<{ file_key: string }>(
    em,
    'select distinct file_key from model_exports where model_id = any(?::text[]) and file_key is not null',
    [pgArray(modelIds)],
  );
  return rows.map((row) => row.file_key);
}

/** The active export jobs of models (cancelled when they go to trash). */
export async function activeExportJobs(em: EntityManager, modelIds: string[]): Promise<string[]> {
  const rows = await query<{ job_id: string }>(
    em,
    'select job_id from model_exports where model_id = any(?::text[]) and status is null and job_id is not null',
    [pgArray(modelIds)],
  );
  return rows.map((row) => row.job_id);
}
