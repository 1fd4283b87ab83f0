// The ingest_staged_images table: images an ingest job has decoded and stored but not yet added to its dataset (see
// staged-image.entity.ts). Staging inserts them (a restarted job skips those already there), the commit reads them
// page by page and then drops them, a discarded attempt drops them and releases their bytes, and the hourly sweep
// drops those of jobs that have ended. Every function takes the EntityManager first, so it runs inside the caller's
// transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Split } from '../datasets/dataset.entity.ts';
import { query } from '../db/sql.ts';
import type { Label } from '../images/labels.ts';

/** A staged image as the commit reads it. */
export interface StagedRow {
  entry_path: string;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  channels: number;
  bytes: string | number;
  error: string | null;
  split: Split;
  labels: Label[];
  metadata: Record<string, unknown>;
  faces_blurred: boolean;
  reference_version: string | null;
}

/** A staged image as staging writes it. */
export interface NewStagedImage {
  entryPath: string;
  position: number;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  channels: number;
  bytes: number;
  error: string | null;
  split: string;
  labels: unknown[];
  metadata: Record<string, unknown>;
  facesBlurred: boolean;
  referenceVersion: string | null;
}

/** The entry paths the job has staged already. */
export async function stagedEntryPaths(em: EntityManager, jobId: string): Promise<string[]> {
  return (
    await query<{ entry_path: string }>(em, 'select entry_path from ingest_staged_images where job_id = ?', [jobId])
  ).map((row) => row.entry_path);
}

/** Stages the images in one statement; an entry path the job staged already is left as it is. */
export async function insertStagedImages(em: EntityManager, jobId: string, rows: NewStagedImage[]): Promise<void> {
  await query(
    em,
    `insert into ingest_staged_images (job_id, entry_path, position, hash, ext, name, width, height, channels, bytes, error, split, labels, metadata, faces_blurred, reference_version)
     values ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)').join(', ')} on conflict do nothing`,
    rows.flatMap((row) => [
      jobId,
      row.entryPath,
      row.position,
      row.hash,
      row.ext,
      row.name,
      row.width,
      row.height,
      row.channels,
      row.bytes,
      row.error,
      row.split,
      JSON.stringify(row.labels),
      JSON.stringify(row.metadata),
      row.facesBlurred,
      row.referenceVersion,
    ]),
  );
}

/** Up to `limit` of the job's staged images after the first `offset`, in position order. */
export function stagedImagesPage(
  em: EntityManager,
  jobId: string,
  limit: number,
  offset: number,
): Promise<StagedRow[]> {
  return query<StagedRow>(
    em,
    'select * from ingest_staged_images where job_id = ? order by position limit ? offset ?',
    [jobId, limit, offset],
  );
}

/** The entry path of a staged image whose stored original (keys as imageKey makes them) is gone, if any. */
export async function stagedWithoutImageBytes(
  em: EntityManager,
  jobId: string,
  workspaceId: string,
): Promise<{ path: string } | undefined> {
  const [lost] = await query<{ path: string }>(
    em,
    `select s.entry_path as path from ingest_staged_images s
       where s.job_id = ? and not exists (select 1 from stored_objects o where o.key = 'ws/' || ? || '/images/' || s.hash || '.' || s.ext) limit 1`,
    [jobId, workspaceId],
  );
  return lost;
}

/** The entry path of a decodable staged image whose stored thumbnail (keys as thumbnailKey makes them) is gone, if any. */
export async function stagedWithoutThumbnail(
  em: EntityManager,
  jobId: string,
  workspaceId: string,
): Promise<{ path: string } | undefined> {
  const [lost] = await query<{ path: string }>(
    em,
    `select s.entry_path as path from ingest_staged_images s
       where s.job_id = ? and s.error is null and not exists (select 1 from stored_objects o where o.key = 'ws/' || ? || '/thumbnails/' || s.hash || '.webp') limit 1`,
    [jobId, workspaceId],
  );
  return lost;
}

/** Drops the job's staged images (its commit moved them in). */
export async function clearStagedImages(em: EntityManager, jobId: string): Promise<void> {
  await query(em, 'delete from ingest_staged_images where job_id = ?', [jobId]);
}

/** Drops the job's staged images; returns their files, for their bytes to be released. */
export function discardStagedImages(em: EntityManager, jobId: string): Promise<Array<{ hash: string; ext: string }>> {
  return query<{ hash: string; ext: string }>(
    em,
    'delete from ingest_staged_images where job_id = ? returning hash, ext',
    [jobId],
  );
}

/** Drops the staged images of jobs that have ended; returns their files by workspace, for their bytes to be released. */
export function discardStagedOfEndedJobs(
  em: EntityManager,
): Promise<Array<{ workspace_id: string; hash: string; ext: string }>> {
  return query<{ workspace_id: string; hash: string; ext: string }>(
    em,
    `delete from ingest_staged_images s using jobs j where j.id = s.job_id and j.status in ('completed', 'failed', 'cancelled')
     returning j.workspace_id, s.hash, s.ext`,
  );
}
