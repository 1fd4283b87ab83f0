// The images table's rows indexed in place (connected storage): those with a reference key beneath their dataset's
// reference, read from there and synced again by a reference ingest. Every function takes the EntityManager first, so
// it runs inside the caller's transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DatasetReference, Split } from '../datasets/dataset.entity.ts';
import { query } from '../db/sql.ts';

/** An image indexed in place, as a commit of a reference ingest reads it. */
export interface IndexedImageRow {
  id: string;
  reference_key: string;
  hash: string;
  ext: string;
  split: Split;
  label_count: number;
  error: string | null;
}

/** The file of an image indexed in place, as a reference plan compares it (bigint bytes come as text). */
export interface ReferencedFileRow {
  reference_key: string;
  reference_version: string | null;
  hash: string;
  ext: string;
  width: number;
  height: number;
  channels: number;
  bytes: string | number;
  error: string | null;
}

/** The dataset's images indexed in place (with a reference key), as a commit of a reference ingest reads them. */
export function referencedImages(em: EntityManager, datasetId: string): Promise<IndexedImageRow[]> {
  return query<IndexedImageRow>(
    em,
    'select id, reference_key, hash, ext, split, label_count, error from images where dataset_id = ? and reference_key is not null',
    [datasetId],
  );
}

/** The files of the dataset's images indexed in place, as a reference plan compares them. */
export function referencedFiles(em: EntityManager, datasetId: string): Promise<ReferencedFileRow[]> {
  return query<ReferencedFileRow>(
    em,
    'select reference_key, reference_version, hash, ext, width, height, channels, bytes, error from images where dataset_id = ? and reference_key is not null',
    [datasetId],
  );
}

/** Where an image of the workspace is read from: its reference key and version, and its dataset's reference; undefined when unknown. */
export async function findReferencedImage(
  em: EntityManager,
  imageId: string,
  workspaceId: string,
): Promise<
  | {
      reference_key: string | null;
      reference_version: string | null;
      bytes: string;
      ext: string;
      name: string;
      reference: DatasetReference | null;
    }
  | undefined
> {
  const [row] = await query<{
    reference_key: string | null;
    reference_version: string | null;
    bytes: string;
    ext: string;
    name: string;
    reference: DatasetReference | null;
  }>(
    em,
    'select i.reference_key, i.reference_version, i.bytes, i.ext, i.name, d.reference from images i join datasets d on d.id = i.dataset_id where i.id = ? and i.workspace_id = ?',
    [imageId, workspaceId],
  );
  return row;
}

/** Points indexed images at their file as staged again (`values`: a JSON array of id, hash, ext, width, height, channels, bytes, error, split, version, name, search). */
export async function updateReferencedImages(em: EntityManager, values: unknown[]): Promise<void> {
  await query(
    em,
    `update images i set hash = v.hash, ext = v.ext, width = v.width, height = v.height, channels = v.channels, bytes = v.bytes, error = v.error,
       split = v.split, reference_version = v.version, name = v.name, search_text = v.search, updated_at = clock_timestamp()
     from jsonb_to_recordset(?::jsonb) as v(id text, hash text, ext text, width int, height int, channels int, bytes bigint, error text, split text, version text, name text, search text)
     where i.id = v.id`,
    [JSON.stringify(values)],
  );
}
