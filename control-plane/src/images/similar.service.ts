import { buffer } from 'node:stream/consumers';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { saveEmbeddings, vectorOf } from '../embeddings/embeddings.store.ts';
import type { ImageEmbedder } from '../embeddings/image-embedder.ts';
import type { VectorIndex } from '../embeddings/vector-index.ts';
import { Unavailable } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { findImage } from './image-access.ts';
import { bytesRefOf, openImageBytes } from './image-bytes.ts';
import type { Image } from './image.entity.ts';
import { searchSimilar, unavailable, visibleTo } from './similar-search.ts';
import { SIMILAR_LIMIT, type SimilarImages, type SimilarQuery } from './similar.schemas.ts';
import { storedVector } from './similar.store.ts';
import { requireProcessing } from '../datasets/connected-storage.ts';

/** Similar images: the query image's vector (embedded now if need be) against the vector index, filtered to what the actor may see. */
export class SimilarImagesService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly embedder: ImageEmbedder;
  private readonly index: VectorIndex;

  constructor(em: EntityManager, deps: { storage: Storage; embedder: ImageEmbedder; index: VectorIndex }) {
    this.em = em;
    this.storage = deps.storage;
    this.embedder = deps.embedder;
    this.index = deps.index;
  }

  async similar(
    actor: Actor,
    imageId: string,
    options: z.output<typeof SimilarQuery>,
  ): Promise<z.input<typeof SimilarImages>> {
    const { image, dataset } = await findImage(this.em, actor, imageId, 'view');
    await requireProcessing(this.em, dataset, 'Similar-image search');
    const modelId = await this.embedder.modelId().catch(unavailable);
    const vector = await this.vectorOf(image, dataset, modelId);
    const filter = {
      modelId,
      hashes: [image.hash],
      datasetId: options.includeSourceDataset ? null : dataset.id,
      heldBy: null,
      visibility: visibleTo(actor),
    };
    return {
      images: await searchSimilar(
        this.em,
        { index: this.index, storage: this.storage },
        [vector],
        filter,
        SIMILAR_LIMIT,
      ),
    };
  }

  /** The image's stored vector, or one made now and kept (503 when it cannot be: no model, no file, not decodable). */
  private async vectorOf(image: Image, dataset: Dataset, modelId: string): Promise<Float32Array> {
    const stored = await storedVector(this.em, image.id, image.hash, modelId);
    if (stored) return vectorOf(stored);
    if (image.error) throw Unavailable(`Image ${image.id} could not be embedded: ${image.error}`);
    const read = await openImageBytes(this.storage, bytesRefOf(image, dataset.workspace.id));
    if (!read) throw Unavailable(`Image ${image.id} could not be embedded: its file could not be read`);
    const [embedding] = await this.embedder.embed([await buffer(read)]).catch(unavailable);
    if (!(embedding instanceof Float32Array))
      throw Unavailable(`Image ${image.id} could not be embedded: ${embedding.error}`);
    await this.em.transactional((tx) =>
      saveEmbeddings(tx, dataset.id, modelId, [{ imageId: image.id, hash: image.hash, vector: embedding }]),
    );
    return embedding;
  }
}
