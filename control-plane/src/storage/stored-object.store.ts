// The stored_objects table: one record per object written to the blob store (its workspace, kind, key and size), so
// storage counts towards the workspace and the orphan sweeps find what nothing refers to. Also the advisory lock that
// guards a workspace's image bytes, and the database clock an export file's content is taken at.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import { pgArray, query } from '../db/sql.ts';
import { unreferencedSql } from './blob-keys.ts';

/** Kinds of objects written whole by a worker, recorded (or re-recorded, with the new size) as they are uploaded. */
export type UploadedObjectKind = 'exports' | 'modelFiles';

/** One advisory lock per workspace guards its image bytes: shared by writers, exclusive for a release. */
const bytesLock = (workspaceId: string) => `image-bytes:${workspaceId}`;

/** Takes the workspace's image-bytes lock shared (until the transaction ends): writers never wait for each other. */
export async function lockImageBytesShared(em: EntityManager, workspaceId: string): Promise<void> {
  await query(em, 'select pg_advisory_xact_lock_shared(hashtextextended(?, 0))', [bytesLock(workspaceId)]);
}

/** Takes the workspace's image-bytes lock exclusively (until the transaction ends), for a release. */
export async function lockImageBytesExclusive(em: EntityManager, workspaceId: string): Promise<void> {
  await query(em, 'select pg_advisory_xact_lock(hashtextextended(?, 0))', [bytesLock(workspaceId)]);
}

/** Records image bytes (originals and thumbnails) of the workspace, leaving records already there as they are. */
export async function recordImageObjects(
  em: EntityManager,
  workspaceId: string,
  objects: Array<{ key: string; bytes: number }>,
): Promise<void> {
  await query(
    em,
    `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes)
     values ${objects.map(() => "(?, now(), now(), ?, 'datasetImages', ?, ?)").join(', ')} on conflict (key) do nothing`,
    objects.flatMap((object) => [newId(), workspaceId, object.key, object.bytes]),
  );
}

/** Records an object a worker uploaded; a record already there takes the new size and time. */
export async function recordUploadedObject(
  em: EntityManager,
  workspaceId: string,
  kind: UploadedObjectKind,
  key: string,
  bytes: number,
): Promise<void> {
  await query(
    em,
    `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values (?, now(), now(), ?, '${kind}', ?, ?)
       on conflict (key) do update set bytes = excluded.bytes, updated_at = now()`,
    [newId(), workspaceId, key, bytes],
  );
}

/** Records a dataset archive (an export file); updatedAt is when its content was taken (default: now). */
export async function recordDatasetArchive(
  em: EntityManager,
  workspaceId: string,
  key: string,
  bytes: number,
  takenAt?: string,
): Promise<void> {
  await query(
    em,
    `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values (?, now(), coalesce(?::timestamptz, now()), ?, 'datasetArchives', ?, ?)
       on conflict (key) do update set bytes = excluded.bytes, updated_at = excluded.updated_at`,
    [newId(), takenAt ?? null, workspaceId, key, bytes],
  );
}

/** Deletes one object's record. */
export async function forgetObject(em: EntityManager, key: string): Promise<void> {
  await query(em, 'delete from stored_objects where key = ?', [key]);
}

/** Deletes the records of these objects. */
export async function forgetObjects(em: EntityManager, keys: string[]): Promise<void> {
  await query(em, 'delete from stored_objects where key = any(?::text[])', [pgArray(keys)]);
}

/** Whether the object is recorded. */
export async function isObjectRecorded(em: EntityManager, key: string): Promise<boolean> {
  const [kept] = await query(em, 'select 1 from stored_objects where key = ?', [key]);
  return Boolean(kept);
}

/** Which of these keys are recorded. */
export async function recordedKeys(em: EntityManager, keys: string[]): Promise<string[]> {
  const recorded = await query<{ key: string }>(em, 'select key from stored_objects where key = any(?::text[])', [
    pgArray(keys),
  ]);
  return recorded.map((row) => row.key);
}

/** Whether the object is recorded and meets `freshSql` (a condition on the stored object, alias f). */
export async function isObjectFresh(em: EntityManager, key: string, freshSql: string): Promise<boolean> {
  const [stored] = await query<{ fresh: boolean }>(
    em,
    `select exists (select 1 from stored_objects f where f.key = ? and ${freshSql}) as fresh`,
    [key],
  );
  return stored.fresh;
}

/** The database's clock (the transaction's start), as text: when a snapshot's content is taken. */
export async function transactionTime(em: EntityManager): Promise<string> {
  const [{ as_of }] = await query<{ as_of: string }>(em, 'select now()::text as as_of');
  return as_of;
}

/**
 * Image bytes (originals, and thumbnails alone) recorded over `ageHours` ago whose hash no image of the workspace has:
 * one row per workspace and hash, the original's (which names the extension) when there is one.
 */
export async function orphanImageObjects(
  em: EntityManager,
  ageHours: number,
): Promise<Array<{ workspace_id: string; hash: string; ext: string }>> {
  return query<{ workspace_id: string; hash: string; ext: string }>(
    em,
    `select distinct on (o.workspace_id, m[2]) o.workspace_id, m[2] as hash, m[3] as ext
     from stored_objects o, regexp_match(o.key, '/(images|thumbnails)/([0-9a-f]{64})\\.([a-z0-9]+)$') m
     where m is not null and o.kind = 'datasetImages' and o.created_at < now() - make_interval(hours => ?)
       and not exists (select 1 from images i where i.workspace_id = o.workspace_id and i.hash = m[2])
     order by o.workspace_id, m[2], m[1] = 'thumbnails'`,
    [ageHours],
  );
}

/** No column that keeps an object refers to it (storage/blob-keys.ts). */
const UNREFERENCED = unreferencedSql();

/** Up to 1000 recorded files (dataset archives and exports, model weights) last written over `ageHours` ago that nothing refers to. */
export async function orphanFileKeys(em: EntityManager, ageHours: number): Promise<string[]> {
  const orphans = await query<{ key: string }>(
    em,
    `select o.key from stored_objects o
     where o.kind in ('datasetArchives', 'modelFiles', 'exports') and o.updated_at < now() - make_interval(hours => ?)
       and ${UNREFERENCED}
     limit 1000`,
    [ageHours],
  );
  return orphans.map((row) => row.key);
}

/** The workspace's recorded bytes, object count and latest change per kind (kinds without any are absent). */
export async function storedTotalsByKind(
  em: EntityManager,
  workspaceId: string,
): Promise<Array<{ kind: string; bytes: string; objects: string; latest: Date }>> {
  return query<{ kind: string; bytes: string; objects: string; latest: Date }>(
    em,
    'select kind, sum(bytes)::bigint as bytes, count(*) as objects, max(updated_at) as latest from stored_objects where workspace_id = ? group by kind',
    [workspaceId],
  );
}

/** The workspace's recorded bytes, all kinds together. */
export async function storedBytesOf(em: EntityManager, workspaceId: string): Promise<string> {
  const [stored] = await query<{ bytes: string }>(
    em,
    'select coalesce(sum(bytes), 0)::bigint as bytes from stored_objects where workspace_id = ?',
    [workspaceId],
  );
  return stored!.bytes;
}

/** Bytes stored by kind, every workspace together (the metrics; a whole-table sum, so read seldom). */
export function storedTotalsAllWorkspaces(em: EntityManager): Promise<Array<{ kind: string; bytes: string }>> {
  return query(em, 'select kind, sum(bytes)::bigint as bytes from stored_objects group by kind');
}
