// The upload_sessions table: the statements the UploadSession entity does not make.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** Deletes the dataset's upload sessions; returns the keys of their objects. */
export async function deleteDatasetUploads(em: EntityManager, datasetId: string): Promise<Array<{ key: string }>> {
  return query<{ key: string }>(
    em,
    `delete from upload_sessions where asset_type = 'datasets' and asset_id = ? returning object_key as key`,
    [datasetId],
  );
}

/** Deletes the models' upload sessions; returns the keys of their objects. */
export async function deleteModelUploads(em: EntityManager, modelIds: string[]): Promise<Array<{ key: string }>> {
  return query<{ key: string }>(
    em,
    `delete from upload_sessions where asset_type = 'models' and asset_id = any(?::text[]) returning object_key as key`,
    [pgArray(modelIds)],
  );
}
