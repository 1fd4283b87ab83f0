import { buffer } from 'node:stream/consumers';
import { Dataset } from '../datasets/dataset.entity.ts';
import { imageKey } from '../images/image-urls.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import type { Storage } from '../storage/storage.ts';
import { countStaleImages, saveEmbeddings, staleImages, type AnalysisProgress, type NewEmbedding, type TargetImage } from './embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from './image-embedder.ts';

/** Images read, embedded and saved together: a cancel waits for at most one batch. */
const BATCH = 16;

/**
 * Dataset analysis, a control-plane job: embeds every image of the dataset that has no current vector (none yet, its
 * content changed, or made by another model), in id order, one transaction per batch that first confirms the job is
 * still held and not cancelled. A run taken again after its process died starts over on what is still stale.
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
    for (let after = ''; ; ) {
      const targets = await staleImages(em, dataset.id, modelId, after, BATCH);
      if (targets.length === 0) break;
      after = targets.at(-1)!.id;
      context.signal.throwIfAborted();
      const rows = await this.embedBatch(context, targets, state);
      await em.transactional(async (tx) => {
        await context.confirmHeld(tx);
        await saveEmbeddings(tx, dataset.id, modelId, rows);
      });
      embedded += rows.length;
      state.processed += targets.length;
      // Images added meanwhile are embedded too: the total grows with them.
      state.total = Math.max(state.total, state.processed);
      state.percent = Math.min(99, Math.floor((state.processed * 100) / state.total));
      context.progress({ ...state });
    }
    return { embedded, failedDownloads: state.failedDownloads, failedInference: state.failedInference, modelId };
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

/** No model to run is the operator's to fix: the job's error says what to do. */
function failJob(error: unknown): never {
  throw error instanceof EmbedderUnavailable ? new JobFailure(error.message) : error;
}
