import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** An image with a current vector (of its content as it is now, from the model in use). */
export interface VectorKey {
  image_id: string;
  image_hash: string;
}

export interface NewLayout {
  datasetId: string;
  workspaceId: string;
  modelId: string;
  digest: string;
  /** In ID order: a point's ordinal is its position here. */
  imageIds: string[];
  xy: Float32Array;
  islands: Int32Array;
}

export interface LayoutHeader {
  points: number;
  created_at: Date | string;
}

export interface LayoutPointRow {
  image_id: string;
  x: number;
  y: number;
  cluster: number | null;
  /** The image's fields as it is now; all null when it is no longer in the dataset. */
  split: 'train' | 'val' | 'test' | null;
  class_ids: number[] | null;
  width: number | null;
  height: number | null;
  bytes: string | number | null;
  label_count: number | null;
  missing: boolean;
}

/** Points written per statement. */
const INSERT_CHUNK = 5000;

/** The dataset's images with a current vector of `modelId`, in id order. */
export function currentVectorKeys(em: EntityManager, datasetId: string, modelId: string): Promise<VectorKey[]> {
  return query<VectorKey>(
    em,
    `select e.image_id, e.image_hash from image_embeddings e join images i on i.id = e.image_id and i.dataset_id = e.dataset_id and i.hash = e.image_hash
     where e.dataset_id = ? and e.model_id = ? order by e.image_id`,
    [datasetId, modelId],
  );
}

/** The vectors (float32 bytes) of some of the dataset's images. */
export function vectorsOf(
  em: EntityManager,
  datasetId: string,
  imageIds: string[],
): Promise<Array<{ image_id: string; vector: Buffer }>> {
  return query(em, `select image_id, vector from image_embeddings where dataset_id = ? and image_id = any(?::text[])`, [
    datasetId,
    pgArray(imageIds),
  ]);
}

/** What the dataset's layout was made from (see NewLayout.digest), when it has one. */
export async function layoutDigest(em: EntityManager, datasetId: string): Promise<string | undefined> {
  const [row] = await query<{ digest: string }>(em, `select digest from dataset_layouts where dataset_id = ?`, [
    datasetId,
  ]);
  return row?.digest;
}

/** Replaces the dataset's layout. */
export async function saveLayout(tx: EntityManager, layout: NewLayout): Promise<void> {
  await query(tx, `delete from dataset_layouts where dataset_id = ?`, [layout.datasetId]);
  await query(
    tx,
    `insert into dataset_layouts (dataset_id, workspace_id, model_id, digest, points) values (?, ?, ?, ?, ?)`,
    [layout.datasetId, layout.workspaceId, layout.modelId, layout.digest, layout.imageIds.length],
  );
  for (let start = 0; start < layout.imageIds.length; start += INSERT_CHUNK) {
    const end = Math.min(start + INSERT_CHUNK, layout.imageIds.length);
    const pick = (values: ArrayLike<number>, offset: number, stride: number) =>
      pgArray(Array.from({ length: end - start }, (_, k) => values[(start + k) * stride + offset]));
    await query(
      tx,
      `insert into dataset_layout_points (dataset_id, ordinal, image_id, x, y, cluster)
       select ?, ? + ordinality - 1, image_id, x, y, cluster from unnest(?::text[], ?::real[], ?::real[], ?::int[]) with ordinality as p (image_id, x, y, cluster, ordinality)`,
      [
        layout.datasetId,
        start,
        pgArray(layout.imageIds.slice(start, end)),
        pick(layout.xy, 0, 2),
        pick(layout.xy, 1, 2),
        pick(layout.islands, 0, 1),
      ],
    );
  }
}

export async function layoutHeader(em: EntityManager, datasetId: string): Promise<LayoutHeader | undefined> {
  const [row] = await query<LayoutHeader>(em, `select points, created_at from dataset_layouts where dataset_id = ?`, [
    datasetId,
  ]);
  return row;
}

/** A page of the layout's points in image id order (their ordinals), with each image's fields as they are now. */
export function layoutPoints(
  em: EntityManager,
  datasetId: string,
  offset: number,
  limit: number,
): Promise<LayoutPointRow[]> {
  return query<LayoutPointRow>(
    em,
    `select p.image_id, p.x, p.y, p.cluster, i.split, i.class_ids, i.width, i.height, i.bytes, i.label_count, i.id is null as missing
     from dataset_layout_points p left join images i on i.id = p.image_id and i.dataset_id = p.dataset_id
     where p.dataset_id = ? and p.ordinal >= ?::bigint and p.ordinal < ?::bigint order by p.ordinal`,
    [datasetId, offset, offset + limit],
  );
}

/**
 * The drawing records (GET .../images/clustering/points: 32 bytes a point, big-endian) of the layout's points with ordinals in [from, to) that are still images of
 * the dataset, built by PostgreSQL in one value: a row per point cost more to read than to build. The images are read
 * in the ID range of these points (ordinals follow ID order), which lets the join hash them.
 */
export async function layoutDrawingRecords(
  em: EntityManager,
  datasetId: string,
  from: number,
  to: number,
): Promise<Buffer> {
  const [row] = await query<{ records: Buffer | null }>(
    em,
    `select string_agg(decode(p.image_id, 'hex') || float4send(p.x) || float4send(p.y) || int4send(coalesce(p.cluster, -1))
         || int4send(coalesce(i.class_ids[1], -1)) || int4send(array_position(array['train', 'val', 'test'], i.split::text) - 1),
         ''::bytea order by p.ordinal) as records
     from dataset_layout_points p join images i on i.id = p.image_id and i.dataset_id = p.dataset_id
     where p.dataset_id = ? and p.ordinal >= ? and p.ordinal < ?
       and i.id >= (select image_id from dataset_layout_points where dataset_id = ? and ordinal = ?)
       and i.id <= (select image_id from dataset_layout_points where dataset_id = ? and ordinal = ?)`,
    [datasetId, from, to, datasetId, from, datasetId, to - 1],
  );
  return row?.records ?? Buffer.alloc(0);
}
