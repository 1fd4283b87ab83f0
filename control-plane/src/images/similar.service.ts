import { buffer } from 'node:stream/consumers';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { saveEmbeddings, vectorOf } from '../embeddings/embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from '../embeddings/image-embedder.ts';
import type { VectorIndex } from '../embeddings/vector-index.ts';
import { Unavailable } from '../http/errors.ts';
import type { Storage } from '../storage/storage.ts';
import { findImage } from './image-access.ts';
import { imageKey, ImageUrls } from './image-urls.ts';
import type { Image } from './image.entity.ts';
import { RESULT_LICENSES, SIMILAR_LIMIT, type SimilarImages, type SimilarQuery } from './similar.schemas.ts';
import { candidates, storedVector, type Visibility } from './similar.store.ts';

const LICENSES = new Set<string>(RESULT_LICENSES);

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

  async similar(actor: Actor, imageId: string, options: z.output<typeof SimilarQuery>): Promise<z.input<typeof SimilarImages>> {
    const { image, dataset } = await findImage(this.em, actor, imageId, 'view');
    const modelId = await this.embedder.modelId().catch(unavailable);
    const vector = await this.vectorOf(image, dataset, modelId);
    const filter = { modelId, hash: image.hash, datasetId: dataset.id, includeSourceDataset: options.includeSourceDataset, visibility: visibleTo(actor) };
    const shown = await this.index.nearestShown(modelId, [vector], SIMILAR_LIMIT, (seqs) => candidates(this.em, seqs, filter));
    const urls = new ImageUrls(this.storage.urls);
    return {
      images: await Promise.all(
        shown.map(async (row) => ({
          id: row.id,
          name: row.name,
          hash: row.hash,
          width: row.width,
          height: row.height,
          thumbnailUrl: (await urls.thumbnail({ workspaceId: row.workspace_id, hash: row.hash, ext: row.ext, name: row.name, error: null }))!,
          dataset: { owner: row.owner, dataset: row.slug, license: licenseOf(row.license) },
          score: Math.round(Math.min(1, Math.max(0, row.similarity)) * 10_000) / 10_000,
        })),
      ),
    };
  }

  /** The image's stored vector, or one made now and kept (503 when it cannot be: no model, no file, not decodable). */
  private async vectorOf(image: Image, dataset: Dataset, modelId: string): Promise<Float32Array> {
    const stored = await storedVector(this.em, image.id, image.hash, modelId);
    if (stored) return vectorOf(stored);
    if (image.error) throw Unavailable(`Image ${image.id} could not be embedded: ${image.error}`);
    const read = await this.storage.store.get(imageKey(dataset.workspace.id, image.hash, image.ext));
    if (!read) throw Unavailable(`Image ${image.id} could not be embedded: its file could not be read`);
    const [embedding] = await this.embedder.embed([await buffer(read.stream)]).catch(unavailable);
    if (!(embedding instanceof Float32Array)) throw Unavailable(`Image ${image.id} could not be embedded: ${embedding.error}`);
    await this.em.transactional((tx) => saveEmbeddings(tx, dataset.id, modelId, [{ imageId: image.id, hash: image.hash, vector: embedding }]));
    return embedding;
  }
}

/** Public datasets, the key's workspace and its user's teams; a training job's key, its job's datasets only. */
function visibleTo(actor: Actor): Visibility {
  if (actor.kind !== 'key') return { workspaceIds: [], datasetIds: null };
  return { workspaceIds: [actor.workspaceId, ...actor.profile.teams.map((team) => team.id)], datasetIds: actor.jobScope?.resourceIds ?? null };
}

function licenseOf(license: string | null): (typeof RESULT_LICENSES)[number] {
  if (!license) return 'None';
  return LICENSES.has(license) ? (license as (typeof RESULT_LICENSES)[number]) : 'Other';
}

function unavailable(error: unknown): never {
  throw error instanceof EmbedderUnavailable ? Unavailable(error.message) : error;
}
