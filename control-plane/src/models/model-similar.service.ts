import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { vectorOf } from '../embeddings/embeddings.store.ts';
import type { ImageEmbedder } from '../embeddings/image-embedder.ts';
import type { VectorIndex } from '../embeddings/vector-index.ts';
import { NotFound } from '../http/errors.ts';
import { searchSimilar, unavailable, visibleTo } from '../images/similar-search.ts';
import { visibleVectors } from '../images/similar.store.ts';
import type { Storage } from '../storage/storage.ts';
import { findModel } from './model-access.ts';
import { worstHashes } from './model-analysis.ts';
import { MODEL_SIMILAR_LIMIT, type ModelSimilarImages, type ModelSimilarQuery } from './model-similar.schemas.ts';

type Address = { owner: string; project: string; model: string };

/** Images like the ones a model's training scored worst on, outside its training dataset: new data worth labelling. */
export class ModelSimilarService {
  private readonly em: EntityManager;
  private readonly deps: { storage: Storage; embedder: ImageEmbedder; index: VectorIndex };

  constructor(em: EntityManager, deps: { storage: Storage; embedder: ImageEmbedder; index: VectorIndex }) {
    this.em = em;
    this.deps = deps;
  }

  async similar(
    actor: Actor,
    at: Address,
    options: z.output<typeof ModelSimilarQuery>,
  ): Promise<z.input<typeof ModelSimilarImages>> {
    const { model } = await findModel(this.em, actor, at.owner, at.project, at.model, 'view');
    await this.em.populate(model, ['analysis', 'validationExtremes']);
    const worst = worstHashes(model.analysis, model.validationExtremes) ?? [];
    const wanted = options.hashes?.length ? options.hashes.filter((hash) => worst.includes(hash)) : worst;
    const hashes = wanted.slice(0, MODEL_SIMILAR_LIMIT);
    if (hashes.length === 0) return { images: [] };
    const modelId = await this.deps.embedder.modelId().catch(unavailable);
    const visibility = visibleTo(actor);
    const stored = new Map(
      (await visibleVectors(this.em, hashes, modelId, visibility)).map((row) => [row.hash, vectorOf(row.vector)]),
    );
    const queries = hashes.map((hash) => stored.get(hash)).filter((vector) => vector !== undefined);
    if (queries.length === 0) {
      throw NotFound(
        `None of the worst validation images of model ${at.owner}/${at.project}/${at.model} is embedded yet: analyze its training dataset first`,
      );
    }
    const filter = { modelId, hashes, datasetId: null, heldBy: model.dataset?.id ?? null, visibility };
    return { images: await searchSimilar(this.em, this.deps, queries, filter, MODEL_SIMILAR_LIMIT) };
  }
}
