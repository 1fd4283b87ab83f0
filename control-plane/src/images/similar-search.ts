// The search behind both similar-images routes (GET /api/images/{imageId}/similar and GET /api/models/.../similar-images):
// query vectors against the vector index, filtered in SQL to what the actor may see, shaped as SimilarImage entries.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { EmbedderUnavailable } from '../embeddings/image-embedder.ts';
import type { VectorIndex } from '../embeddings/vector-index.ts';
import { Unavailable } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { ImageUrls } from './image-urls.ts';
import { RESULT_LICENSES, type SimilarImage } from './similar.schemas.ts';
import { candidates, type CandidateFilter, type CandidateRow, type Visibility } from './similar.store.ts';

const LICENSES = new Set<string>(RESULT_LICENSES);

type Found = CandidateRow & { similarity: number };

/**
 * Up to `limit` images near the query vectors, taken from each query's nearest in turn (the first query's nearest, the
 * second's, ..., then each one's second nearest), each image once; one query: its nearest, most similar first.
 */
export async function searchSimilar(
  em: EntityManager,
  deps: { index: VectorIndex; storage: Storage },
  queries: Float32Array[],
  filter: CandidateFilter,
  limit: number,
): Promise<Array<z.input<typeof SimilarImage>>> {
  const lists = await deps.index.nearestShown(filter.modelId, queries, limit, (seqs) => candidates(em, seqs, filter));
  const found = inTurn(lists, limit);
  const urls = new ImageUrls(deps.storage.urls);
  return Promise.all(
    found.map(async (row) => ({
      id: row.id,
      name: row.name,
      hash: row.hash,
      width: row.width,
      height: row.height,
      thumbnailUrl: (await urls.thumbnail({
        workspaceId: row.workspace_id,
        hash: row.hash,
        ext: row.ext,
        name: row.name,
        error: null,
      }))!,
      dataset: { owner: row.owner, dataset: row.slug, license: licenseOf(row.license) },
      score: Math.round(Math.min(1, Math.max(0, row.similarity)) * 10_000) / 10_000,
    })),
  );
}

/** Round robin over the lists, each image once (where two queries found it, at the first turn), up to `limit`. */
function inTurn(lists: Found[][], limit: number): Found[] {
  const taken = new Map<string, Found>();
  for (let rank = 0; taken.size < limit && lists.some((list) => rank < list.length); rank++) {
    for (const list of lists) {
      const row = list[rank];
      if (row && !taken.has(row.id)) taken.set(row.id, row);
      if (taken.size === limit) break;
    }
  }
  return [...taken.values()];
}

/** Public datasets, the key's workspace and its user's teams; a training job's key, its job's datasets only. */
export function visibleTo(actor: Actor): Visibility {
  if (actor.kind !== 'key') return { workspaceIds: [], datasetIds: null };
  return {
    workspaceIds: [actor.workspaceId, ...actor.profile.teams.map((team) => team.id)],
    datasetIds: actor.jobScope?.resourceIds ?? null,
  };
}

/** The embedder's failures (no model, not loadable) are 503s. */
export function unavailable(error: unknown): never {
  throw error instanceof EmbedderUnavailable ? Unavailable(error.message) : error;
}

function licenseOf(license: string | null): (typeof RESULT_LICENSES)[number] {
  if (!license) return 'None';
  return LICENSES.has(license) ? (license as (typeof RESULT_LICENSES)[number]) : 'Other';
}
