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
  /** The query image: its content and dataset. */
  hash: string;
  datasetId: string;
  includeSourceDataset: boolean;
  visibility: Visibility;
}

/** The stored vectors `seqs` that still exist, each with its image and whether the answer may show it. */
export function candidates(em: EntityManager, seqs: bigint[], filter: CandidateFilter): Promise<CandidateRow[]> {
  const { visibility } = filter;
  return query<CandidateRow>(
    em,
    `select e.seq, i.id, i.name, i.hash, i.ext, i.width, i.height, d.workspace_id, w.handle as owner, d.slug, d.license,
            (e.model_id = ? and e.image_hash = i.hash and i.error is null and d.deleted_at is null and i.hash <> ?
             and (d.visibility = 'public' or d.workspace_id = any(?::text[]))
             and (?::text[] is null or d.id = any(?::text[]))
             and (?::boolean or (d.id <> ? and not exists (select 1 from images c where c.dataset_id = d.id and c.hash = ?)))) as shown
       from image_embeddings e join images i on i.id = e.image_id join datasets d on d.id = i.dataset_id join workspaces w on w.id = d.workspace_id
      where e.seq = any(?::bigint[])`,
    [
      filter.modelId,
      filter.hash,
      pgArray(visibility.workspaceIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
      visibility.datasetIds && pgArray(visibility.datasetIds),
      filter.includeSourceDataset,
      filter.datasetId,
      filter.hash,
      pgArray(seqs.map(String)),
    ],
  );
}

/** The image's current vector of `modelId`, if it has one. */
export async function storedVector(em: EntityManager, imageId: string, hash: string, modelId: string): Promise<Buffer | undefined> {
  const [row] = await query<{ vector: Buffer }>(em, 'select vector from image_embeddings where image_id = ? and image_hash = ? and model_id = ?', [imageId, hash, modelId]);
  return row?.vector;
}
