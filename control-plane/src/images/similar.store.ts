import type { EntityManager } from '@mikro-orm/postgresql';
import { pgArray, query } from '../db/sql.ts';

/** What a similar-images answer may show to an actor: public datasets, and datasets of these workspaces (of these only, when set). */
export interface Visibility {
  workspaceIds: string[];
  datasetIds: string[] | null;
}

export interface CandidateRow {
  seq: string;
  id: string;
  name: string;
  hash: string;
  ext: string;
  width: number;
  height: number;
  workspace_id: string;
  owner: string;
  slug: string;
  license: string | null;
  /** The answer may show it: visible, current, not a copy of the query, and outside the excluded datasets. */
  shown: boolean;
}

export interface CandidateFilter {
  modelId: string;
  /** The query images' contents: never shown. */
  hashes: string[];
  /** Left out, with the datasets holding a copy of a query image (null: none). */
  datasetId: string | null;
  /** Images whose content this dataset holds are left out, its own included (null: none). */
  heldBy: string | null;
  visibility: Visibility;
}

/** The stored vectors `seqs` that still exist, each with its image and whether the answer may show it. */
export function candidates(em: EntityManager, seqs: bigint[], filter: CandidateFilter): Promise<CandidateRow[]> {
  const { visibility } = filter;
  const hashes = pgArray(filter.hashes);
  return query<CandidateRow>(
    em,
    `select e.seq, i.id, i.name, i.hash, i.ext, i.width, i.height, d.workspace_id, w.handle as owner, d.slug, d.license,
            (e.model_id = ? and e.image_hash = i.hash and i.error is null and d.deleted_at is null and i.hash <> all(?::text[])
             and (d.visibility = 'public' or d.workspace_id = any(?::text[]))
             and (?::text[] is null or d.id = any(?::text[]))
             and (?::text is null or (d.id <> ? and not exists (select 1 from images c where c.dataset_id = d.id and c.hash = any(?::text[]))))
             and (?::text is null or not exists (select 1 from images h where h.dataset_id = ? and h.hash = i.hash))) as shown
       from image_embeddings e join images i on i.id = e.image_id join datasets d on d.id = i.dataset_id join workspaces w on w.id = d.workspace_id
      where e.seq = any(?::bigint[])`,
    [
      filter.modelId,
      hashes,
      pgArray(visibility.workspaceIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
      filter.datasetId,
      filter.datasetId,
      hashes,
      filter.heldBy,
      filter.heldBy,
      pgArray(seqs.map(String)),
    ],
  );
}

/** The image's current vector of `modelId`, if it has one. */
export async function storedVector(
  em: EntityManager,
  imageId: string,
  hash: string,
  modelId: string,
): Promise<Buffer | undefined> {
  const [row] = await query<{ vector: Buffer }>(
    em,
    'select vector from image_embeddings where image_id = ? and image_hash = ? and model_id = ?',
    [imageId, hash, modelId],
  );
  return row?.vector;
}

/**
 * One current vector of `modelId` per content among `hashes`, from images of live datasets the actor may see
 * (the visibility of candidates); contents without one are missing from the answer.
 */
export function visibleVectors(
  em: EntityManager,
  hashes: string[],
  modelId: string,
  visibility: Visibility,
): Promise<Array<{ hash: string; vector: Buffer }>> {
  return query<{ hash: string; vector: Buffer }>(
    em,
    `select distinct on (e.image_hash) e.image_hash as hash, e.vector
       from image_embeddings e join images i on i.id = e.image_id and i.hash = e.image_hash join datasets d on d.id = i.dataset_id
      where e.model_id = ? and e.image_hash = any(?::text[]) and d.deleted_at is null
        and (d.visibility = 'public' or d.workspace_id = any(?::text[]))
        and (?::text[] is null or d.id = any(?::text[]))
      order by e.image_hash, e.seq`,
    [
      modelId,
      pgArray(hashes),
      pgArray(visibility.workspaceIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
    ],
  );
}
