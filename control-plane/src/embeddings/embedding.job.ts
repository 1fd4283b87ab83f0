import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { Dataset } from '../datasets/dataset.entity.ts';
import { imageKey } from '../images/image-urls.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import type { Storage } from '../storage/storage.ts';
import { countStaleImages, saveEmbeddings, staleImages, type AnalysisProgress, type NewEmbedding, type TargetImage } from './embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from './image-embedder.ts';
import { computeLayout } from './layout.ts';
import { currentVectorKeys, layoutDigest, saveLayout, vectorsOf } from './layouts.store.ts';

/** Images read, embedded and saved together: a cancel waits for the batches in flight (two). */
const BATCH = 16;
/** The most images one layout places (about 5 minutes and 5 GB on one core); a larger dataset is laid out from an even sample. */
export const MAX_LAYOUT = 50_000;
/** Vectors read from the database at a time while gathering a layout's input. */
const READ_BATCH = 1000;
/** The layout's random seed: the same vectors give the same layout. */
export const LAYOUT_SEED = 20;

/**
 * Dataset analysis, a control-plane job: embeds every image of the dataset that has no current vector (none yet, its
 * content changed, or made by another model), in id order, one transaction per batch that first confirms the job is
 * still held and not cancelled. A run taken again after its process died starts over on what is still stale. Then
 * (stage umap) it lays the current vectors out in 2-D with their islands, unless the layout in place was made from
 * exactly these vectors.
 */
export class EmbeddingJob implements JobHandler {
  private readonly storage: Storage;
  private readonly embedder: ImageEmbedder;

  constructor(storage: Storage, embedder: ImageEmbedder) {
    this.storage = storage;
    this.embedder = embedder;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const { em } = context;
    const dataset = await em.findOne(Dataset, { id: context.subjectId!, deletedAt: null });
    if (!dataset) throw new JobFailure('The dataset was deleted');
    const modelId = await this.embedder.modelId().catch(failJob);
    const state: AnalysisProgress = { stage: 'embedding', percent: 0, processed: 0, total: await countStaleImages(em, dataset.id, modelId), failedDownloads: 0, failedInference: 0 };
    context.progress({ ...state });
    let embedded = 0;
    // Two batches in flight: the next one's files are read and decoded while this one's model runs and its vectors are
    // saved, so the model is not left idle between batches.
    let next = this.startBatch(context, dataset.id, modelId, '', state);
    for (;;) {
      const batch = await next;
      if (!batch) break;
      next = this.startBatch(context, dataset.id, modelId, batch.targets.at(-1)!.id, state);
      // Handled here and re-thrown where it is awaited: a cancel meanwhile leaves it unawaited.
      next.catch(() => undefined);
      const rows = await batch.embedded;
      context.signal.throwIfAborted();
      await em.transactional(async (tx) => {
        await context.confirmHeld(tx);
        await saveEmbeddings(tx, dataset.id, modelId, rows);
      });
      embedded += rows.length;
      state.processed += batch.targets.length;
      // Images added meanwhile are embedded too: the total grows with them.
      state.total = Math.max(state.total, state.processed);
      state.percent = Math.min(99, Math.floor((state.processed * 100) / state.total));
      context.progress({ ...state });
    }
    const laidOut = await this.layOut(context, dataset, modelId, state);
    return { embedded, laidOut, failedDownloads: state.failedDownloads, failedInference: state.failedInference, modelId };
  }

  /** Replaces the dataset's layout when its vectors changed; the number of images laid out (null: the layout was current). */
  private async layOut(context: JobContext, dataset: Dataset, modelId: string, state: AnalysisProgress): Promise<number | null> {
    const { em } = context;
    // The embedding stage's counts stay in the progress: they are the analysis's result.
    const progress = (percent: number) => context.progress({ ...state, stage: 'umap', percent: Math.min(99, percent) });
    progress(0);
    const keys = evenSample(await currentVectorKeys(em, dataset.id, modelId), MAX_LAYOUT);
    const digest = keys.reduce((hash, key) => hash.update(`${key.image_id}:${key.image_hash};`), createHash('sha256').update(`${modelId};`)).digest('hex');
    if ((await layoutDigest(em, dataset.id)) === digest) return null;
    const imageIds = keys.map((key) => key.image_id);
    const { vectors, dims } = await this.readVectors(context, dataset.id, imageIds);
    const layout = await computeLayout(vectors, dims, { seed: LAYOUT_SEED, signal: context.signal, progress });
    await em.transactional(async (tx) => {
      await context.confirmHeld(tx);
      await saveLayout(tx, { datasetId: dataset.id, workspaceId: dataset.workspace.id, modelId, digest, imageIds, ...layout });
    });
    return imageIds.length;
  }

  /** The images' vectors, in their order, in one float32 buffer (dims: the vectors' length, 0 when there are none). */
  private async readVectors(context: JobContext, datasetId: string, imageIds: string[]): Promise<{ vectors: Float32Array; dims: number }> {
    let vectors = new Float32Array(0);
    let dims = 0;
    for (let start = 0; start < imageIds.length; start += READ_BATCH) {
      context.signal.throwIfAborted();
      const batch = imageIds.slice(start, start + READ_BATCH);
      const rows = new Map((await vectorsOf(context.em, datasetId, batch)).map((row) => [row.image_id, row.vector]));
      batch.forEach((id, k) => {
        const bytes = rows.get(id);
        // A vector replaced since its key was read is laid out as it is now; one removed meanwhile stays zero.
        if (!bytes) return;
        if (dims === 0) {
          dims = bytes.byteLength / 4;
          vectors = new Float32Array(imageIds.length * dims);
        }
        vectors.set(new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + dims * 4)), (start + k) * dims);
      });
    }
    return { vectors, dims };
  }

  /** The next stale images after `after`, their embedding started; undefined when none is left. */
  private async startBatch(context: JobContext, datasetId: string, modelId: string, after: string, state: AnalysisProgress): Promise<{ targets: TargetImage[]; embedded: Promise<NewEmbedding[]> } | undefined> {
    const targets = await staleImages(context.em, datasetId, modelId, after, BATCH);
    if (targets.length === 0) return undefined;
    context.signal.throwIfAborted();
    const embedded = this.embedBatch(context, targets, state);
    embedded.catch(() => undefined);
    return { targets, embedded };
  }

  /** The batch's files through the embedder; what cannot be read or decoded is counted and passed over. */
  private async embedBatch(context: JobContext, targets: TargetImage[], state: AnalysisProgress): Promise<NewEmbedding[]> {
    const files = await Promise.all(
      targets.map(async (image) => {
        const read = await this.storage.store.get(imageKey(image.workspace_id, image.hash, image.ext));
        return read ? { image, bytes: await buffer(read.stream) } : undefined;
      }),
    );
    const found = files.filter((file) => file !== undefined);
    state.failedDownloads += targets.length - found.length;
    const embeddings = await this.embedder.embed(found.map((file) => file.bytes)).catch(failJob);
    const rows: NewEmbedding[] = [];
    embeddings.forEach((embedding, index) => {
      const { image } = found[index];
      if (embedding instanceof Float32Array) rows.push({ imageId: image.id, hash: image.hash, vector: embedding });
      else {
        state.failedInference += 1;
        context.log.warn({ imageId: image.id, reason: embedding.error }, 'dataset analysis could not embed an image');
      }
    });
    return rows;
  }
}

/** At most `max` of the items, spread evenly over them, in order. */
function evenSample<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  return Array.from({ length: max }, (_, k) => items[Math.floor((k * items.length) / max)]);
}

/** No model to run is the operator's to fix: the job's error says what to do. */
function failJob(error: unknown): never {
  throw error instanceof EmbedderUnavailable ? new JobFailure(error.message) : error;
}
