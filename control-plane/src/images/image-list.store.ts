// The dataset images list's reads of the images table: pages by offset or keyset, ids in a given order, filtered
// totals, and the look-alike search's joins with image_embeddings. The WHERE and ORDER BY clauses come built by
// image-list.ts (column alias i); every function takes the EntityManager first.
import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** A SQL fragment (a WHERE or ORDER BY clause) and its parameters, in order. */
export interface SqlFragment {
  sql: string;
  params: unknown[];
}

/** An image row as the dataset images list shows it. */
export interface ImageRow {
  id: string;
  hash: string;
  ext: string;
  name: string;
  width: number;
  height: number;
  split: 'train' | 'val' | 'test';
  label_count: number;
  class_ids: number[];
  bytes: string | number;
  error: string | null;
  reference_key: string | null;
  /** ISO 8601, formatted by PostgreSQL (the driver hands timestamps over as text). */
  created_at: string;
  updated_at: string;
}

const iso = (column: string) =>
  `to_char(${column} at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ${column.replace('i.', '')}`;
const COLUMNS = `i.id, i.hash, i.ext, i.name, i.width, i.height, i.split, i.label_count, i.class_ids, i.bytes, i.error, i.reference_key, ${iso('i.created_at')}, ${iso('i.updated_at')}`;

/** One page of the list: `limit` rows matching `where` in `order` after `skip` (a deferred join keeps deep offsets to an index walk). */
export function listImagePage(
  em: EntityManager,
  where: SqlFragment,
  order: SqlFragment,
  limit: number,
  skip: number,
): Promise<ImageRow[]> {
  return query<ImageRow>(
    em,
    `select ${COLUMNS} from images i
       join (select i.id from images i where ${where.sql} order by ${order.sql} limit ? offset ?) page on page.id = i.id
       order by ${order.sql}`,
    [...where.params, ...order.params, limit, skip, ...order.params],
  );
}

/** The dataset's images among `imageIds`, in the order of `imageIds`. */
export function listImagesInOrder(em: EntityManager, datasetId: string, imageIds: string[]): Promise<ImageRow[]> {
  return query<ImageRow>(
    em,
    `select ${COLUMNS} from images i where i.dataset_id = ? and i.id = any(?::text[]) order by array_position(?::text[], i.id)`,
    [datasetId, pgArray(imageIds), pgArray(imageIds)],
  );
}

/** Whether the image is (still) in the dataset. */
export async function isImageInDataset(em: EntityManager, imageId: string, datasetId: string): Promise<boolean> {
  const [found] = await query<{ found: boolean }>(
    em,
    'select exists (select 1 from images where id = ? and dataset_id = ?) as found',
    [imageId, datasetId],
  );
  return found.found;
}

/** How many images (alias i) match `where`. */
export async function countImagesWhere(em: EntityManager, where: SqlFragment): Promise<number> {
  const [row] = await query<{ total: number }>(
    em,
    `select count(*)::int as total from images i where ${where.sql}`,
    where.params,
  );
  return row.total;
}

/** The vectors of model `modelId` of the first `limit` images matching `where` in `order`. */
export function vectorsOfImagesWhere(
  em: EntityManager,
  modelId: string,
  where: SqlFragment,
  order: SqlFragment,
  limit: number,
): Promise<Array<{ vector: Buffer }>> {
  return query<{ vector: Buffer }>(
    em,
    `select e.vector from images i join image_embeddings e on e.image_id = i.id and e.image_hash = i.hash and e.model_id = ?
          where ${where.sql} order by ${order.sql} limit ?`,
    [modelId, ...where.params, ...order.params, limit],
  );
}

/** The images of the vectors (by seq), and whether each is one to show: a vector of the model, current for its image, which matches `shown`. */
export function imagesOfVectors(
  em: EntityManager,
  modelId: string,
  shown: SqlFragment,
  seqs: ReadonlyArray<number | bigint | string>,
): Promise<Array<{ seq: string; id: string; shown: boolean }>> {
  return query<{ seq: string; id: string; shown: boolean }>(
    em,
    `select e.seq, i.id, (e.model_id = ? and e.image_hash = i.hash and ${shown.sql}) as shown
             from image_embeddings e join images i on i.id = e.image_id where e.seq = any(?::bigint[])`,
    [modelId, ...shown.params, pgArray(seqs.map(String))],
  );
}
