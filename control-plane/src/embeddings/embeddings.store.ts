import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import type { JobProgress, JobStatus } from '../jobs/job.entity.ts';

export const EMBEDDINGS_JOB = 'dataset-embeddings';

/** An analysis's state, in jobs.progress (the SDK's activeJob.progress); the umap stage has only its percent. */
export interface AnalysisProgress extends JobProgress {
  stage: 'embedding' | 'umap';
  processed: number;
  total: number;
  /** Images whose file could not be read from storage. */
  failedDownloads: number;
  /** Images the embedder could not read (not decodable). */
  failedInference: number;
  /** Where the images are embedded: worker hosts (HostEmbedding) or this control plane's CPU. */
  placement?: 'hosts' | 'control-plane';
  /** On hosts: the device the last chunk ran on (cpu where a host had no GPU or no CUDA provider). */
  device?: 'cpu' | 'cuda';
}

export interface AnalysisRow {
  id: string;
  status: JobStatus;
  progress: Partial<AnalysisProgress> | null;
  created_at: Date;
}

export interface TargetImage {
  id: string;
  workspace_id: string;
  hash: string;
  ext: string;
  reference_key: string | null;
}

/** A vector to keep for an image as it was read (its hash then). */
export interface NewEmbedding {
  imageId: string;
  hash: string;
  vector: Float32Array;
}

/**
 * The dataset's images without a current vector of `modelId` (none, or made from other content or another model). The
 * check is a subquery per image by its key (an image has at most one vector), not NOT EXISTS: right after an ingest the
 * statistics say the dataset holds one image, and the anti-join planned from them compared every image with every
 * vector of the dataset, for each batch (1.5 s a batch at 6,000 images, against 9 ms).
 */
const STALE = `from images i where i.dataset_id = ? and i.error is null and not coalesce(
  (select e.dataset_id = i.dataset_id and e.image_hash = i.hash from image_embeddings e where e.image_id = i.id and e.model_id = ?), false)`;

/** The next images to embed after `after`, in id order. */
export function staleImages(
  em: EntityManager,
  datasetId: string,
  modelId: string,
  after: string,
  limit: number,
): Promise<TargetImage[]> {
  return query<TargetImage>(
    em,
    `select i.id, i.workspace_id, i.hash, i.ext, i.reference_key ${STALE} and i.id > ? order by i.id limit ?`,
    [datasetId, modelId, after, limit],
  );
}

export async function countStaleImages(em: EntityManager, datasetId: string, modelId: string): Promise<number> {
  const [row] = await query<{ n: number }>(em, `select count(*)::int as n ${STALE}`, [datasetId, modelId]);
  return row.n;
}

/**
 * Keeps the vectors (float32, little-endian), replacing an image's earlier one; call it in a transaction. Images deleted
 * or moved to another dataset meanwhile are passed over; each row takes the image's workspace and dataset as they are now.
 * Every row written gets a new seq; writers take turns (a transaction lock), so seqs commit in order and a reader that
 * goes on from the highest seq it has seen misses none (see VectorIndex).
 */
export async function saveEmbeddings(
  tx: EntityManager,
  datasetId: string,
  modelId: string,
  rows: NewEmbedding[],
): Promise<void> {
  if (rows.length === 0) return;
  await query(tx, `select pg_advisory_xact_lock(hashtextextended('image_embeddings', 0))`);
  const values = rows.map(() => '(?, ?, ?::bytea)').join(', ');
  const params = rows.flatMap((row) => [
    row.imageId,
    row.hash,
    Buffer.from(row.vector.buffer, row.vector.byteOffset, row.vector.byteLength),
  ]);
  await query(
    tx,
    `insert into image_embeddings (image_id, workspace_id, dataset_id, image_hash, model_id, vector)
     select i.id, i.workspace_id, i.dataset_id, v.hash, ?, v.vector from (values ${values}) as v(id, hash, vector)
       join images i on i.id = v.id and i.dataset_id = ?
     on conflict (image_id) do update set workspace_id = excluded.workspace_id, dataset_id = excluded.dataset_id,
       image_hash = excluded.image_hash, model_id = excluded.model_id, vector = excluded.vector, created_at = now(),
       seq = nextval('image_embeddings_seq')`,
    [modelId, ...params, datasetId],
  );
}

/** Current vectors of the dataset's images (of `modelId` when known), and when its newest image arrived. */
export async function datasetEmbeddingCounts(
  em: EntityManager,
  datasetId: string,
  modelId: string | null,
): Promise<{ embeddings: number; latestImageAt: Date | null }> {
  const [row] = await query<{ embeddings: number; latest_image_at: Date | null }>(
    em,
    `select (select count(*)::int from image_embeddings e join images i on i.id = e.image_id and i.dataset_id = e.dataset_id and i.hash = e.image_hash
              where e.dataset_id = ? and (?::text is null or e.model_id = ?)) as embeddings,
            (select max(created_at) from images where dataset_id = ?) as latest_image_at`,
    [datasetId, modelId, modelId, datasetId],
  );
  return { embeddings: row.embeddings, latestImageAt: row.latest_image_at };
}

/** How many vectors of `modelId` the dataset's images have (current or not), and the seq of the newest. */
export async function datasetVectors(
  em: EntityManager,
  datasetId: string,
  modelId: string,
): Promise<{ count: number; newest: string | null }> {
  const [row] = await query<{ count: number; newest: string | null }>(
    em,
    'select count(*)::int as count, max(seq)::text as newest from image_embeddings where dataset_id = ? and model_id = ?',
    [datasetId, modelId],
  );
  return row;
}

/** The dataset's queued or running analysis. */
export async function activeAnalysis(em: EntityManager, datasetId: string): Promise<AnalysisRow | undefined> {
  const [row] = await query<AnalysisRow>(
    em,
    `select id, status, progress, created_at from jobs where kind = ? and subject_id = ? and status in ('queued', 'running') order by created_at desc limit 1`,
    [EMBEDDINGS_JOB, datasetId],
  );
  return row;
}

/** When the dataset's last analysis completed. */
export async function lastAnalyzedAt(em: EntityManager, datasetId: string): Promise<Date | null> {
  const [row] = await query<{ at: Date | null }>(
    em,
    `select max(finished_at) as at from jobs where kind = ? and subject_id = ? and status = 'completed'`,
    [EMBEDDINGS_JOB, datasetId],
  );
  return row.at;
}

export interface StoredVector {
  seq: string;
  vector: Buffer;
}

/** The next vectors of `modelId` written after seq `after`, in seq order. */
export function vectorsAfter(
  em: EntityManager,
  modelId: string,
  after: bigint,
  limit: number,
): Promise<StoredVector[]> {
  return query<StoredVector>(
    em,
    'select seq, vector from image_embeddings where model_id = ? and seq > ? order by seq limit ?',
    [modelId, after.toString(), limit],
  );
}

/** A stored vector as float32 values. */
export function vectorOf(bytes: Uint8Array): Float32Array {
  return new Float32Array(new Uint8Array(bytes).buffer);
}

/** The length of the vectors `modelId` gave so far (null before its first): a host's vectors must match it. */
export async function modelDims(em: EntityManager, modelId: string): Promise<number | null> {
  const [row] = await query<{ dims: number }>(
    em,
    'select octet_length(vector) / 4 as dims from image_embeddings where model_id = ? limit 1',
    [modelId],
  );
  return row ? Number(row.dims) : null;
}
