import { createHash } from 'node:crypto';
import { buffer } from 'node:stream/consumers';
import { Dataset } from '../datasets/dataset.entity.ts';
import { openImageBytes } from '../images/image-bytes.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import type { Storage } from '../storage/storage.ts';
import {
  countStaleImages,
  saveEmbeddings,
  staleImages,
  type AnalysisProgress,
  type NewEmbedding,
  type TargetImage,
} from './embeddings.store.ts';
import type { ChunkOutcome } from './chunk-output.ts';
import { HostPathFailed, type HostEmbedding } from './host-embedding.ts';
import { EmbedderUnavailable, type Embedding, type ImageEmbedder } from './image-embedder.ts';
import { computeLayout } from './layout.ts';
import { currentVectorKeys, layoutDigest, saveLayout, vectorsOf } from './layouts.store.ts';

/** Images read, embedded and saved together: a cancel waits for the batches in flight (two). */
const BATCH = 16;
/** Vectors read from the database at a time while gathering a layout's input or placing the rest. */
const READ_BATCH = 1000;
/** The share of the umap stage's progress the sample's layout takes; placing the rest takes the remainder. */
const SAMPLE_SHARE = 0.8;
/** The layout's random seed: the same vectors give the same layout. */
export const LAYOUT_SEED = 20;

/**
 * Dataset analysis, a control-plane job: embeds every image of the dataset that has no current vector (none yet, its
 * content changed, or made by another model), in id order, one transaction per batch that first confirms the job is
 * still held and not cancelled. Where it embeds is EMBEDDING_PLACEMENT's (HostEmbedding.choose): in chunks on worker
 * hosts (their GPUs), or here on this control plane's CPU, which also takes over when the host path fails under auto.
 * A run taken again after its process died starts over on what is still stale. Then
 * (stage umap) it lays the current vectors out in 2-D with their islands, unless the layout in place was made from
 * exactly these vectors.
 */
export class EmbeddingJob implements JobHandler {
  private readonly storage: Storage;
  private readonly embedder: ImageEmbedder;
  private readonly hosts: HostEmbedding;
  /** The most images UMAP lays out itself (EMBEDDING_LAYOUT_SAMPLE); the others are placed beside their neighbours. */
  private readonly layoutSample: number;

  constructor(storage: Storage, embedder: ImageEmbedder, hosts: HostEmbedding, options: { layoutSample: number }) {
    this.storage = storage;
    this.embedder = embedder;
    this.hosts = hosts;
    this.layoutSample = options.layoutSample;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const { em } = context;
    const dataset = await em.findOne(Dataset, { id: context.subjectId!, deletedAt: null });
    if (!dataset) throw new JobFailure('The dataset was deleted');
    const modelId = await this.embedder.modelId().catch(failJob);
    const state: AnalysisProgress = {
      stage: 'embedding',
      percent: 0,
      processed: 0,
      total: await countStaleImages(em, dataset.id, modelId),
      failedDownloads: 0,
      failedInference: 0,
    };
    context.progress({ ...state });
    const counts = { embedded: 0 };
    const keep = (targets: TargetImage[], embeddings: Embedding[]) =>
      this.keep(context, dataset, modelId, targets, embeddings, state, counts);
    let after = '';
    const onHosts = state.total > 0 ? await this.hosts.choose(em, dataset.workspace.id) : null;
    if (onHosts) {
      state.placement = 'hosts';
      context.progress({ ...state });
      const model = await this.embedder.describe().catch(failJob);
      const run = {
        datasetId: dataset.id,
        workspaceId: dataset.workspace.id,
        model,
        modelId,
        gpuCount: onHosts.gpuCount,
      };
      try {
        after = await this.hosts.run(context, {
          ...run,
          keep: (targets, outcome) => keep(targets, this.fromHost(outcome, state)),
        });
      } catch (error) {
        if (!(error instanceof HostPathFailed)) throw error;
        if (this.hosts.placement === 'hosts')
          throw new JobFailure(`Embedding on worker hosts failed: ${error.message}`);
        context.log.warn(
          { reason: error.message },
          'dataset analysis embeds on the control plane: the host path failed',
        );
        state.placement = 'control-plane';
        after = '';
      }
    }
    // Under hosts nothing is left but images added meanwhile: the next analysis takes them, on hosts too.
    if (this.hosts.placement !== 'hosts') {
      state.placement ??= 'control-plane';
      await this.embedHere(context, dataset.id, modelId, after, state, keep);
    }
    const laidOut = await this.layOut(context, dataset, modelId, state);
    return {
      embedded: counts.embedded,
      laidOut,
      failedDownloads: state.failedDownloads,
      failedInference: state.failedInference,
      modelId,
      placement: state.placement,
      ...(state.device && { device: state.device }),
    };
  }

  /**
   * Replaces the dataset's layout when its vectors changed; the number of images laid out (null: the layout was
   * current). Every image with a current vector is in it: UMAP lays out an even sample of at most layoutSample of them
   * (about 5 minutes and 5 GB on one core at 50,000), and the layout's thread places the others, READ_BATCH at a time,
   * beside their nearest sampled neighbours.
   */
  private async layOut(
    context: JobContext,
    dataset: Dataset,
    modelId: string,
    state: AnalysisProgress,
  ): Promise<number | null> {
    const { em } = context;
    // The embedding stage's counts stay in the progress: they are the analysis's result.
    const progress = (percent: number) => context.progress({ ...state, stage: 'umap', percent: Math.min(99, percent) });
    progress(0);
    const keys = await currentVectorKeys(em, dataset.id, modelId);
    const digest = keys
      .reduce(
        (hash, key) => hash.update(`${key.image_id}:${key.image_hash};`),
        createHash('sha256').update(`${modelId};sample ${this.layoutSample};`),
      )
      .digest('hex');
    if ((await layoutDigest(em, dataset.id)) === digest) return null;
    const imageIds = keys.map((key) => key.image_id);
    const sampled = evenSample(imageIds.length, this.layoutSample);
    const share = sampled.length < imageIds.length ? SAMPLE_SHARE : 1;
    const sample = await this.readVectors(
      context,
      dataset.id,
      sampled.map((k) => imageIds[k]),
    );
    const layout = await computeLayout(sample.vectors, sample.dims, {
      seed: LAYOUT_SEED,
      signal: context.signal,
      progress: (percent) => progress(percent * share),
      placing: share < 1,
    });
    const xy = new Float32Array(imageIds.length * 2);
    const islands = new Int32Array(imageIds.length);
    try {
      sampled.forEach((k, i) => {
        xy.set(layout.xy.subarray(2 * i, 2 * i + 2), 2 * k);
        islands[k] = layout.islands[i];
      });
      const rest = complement(sampled, imageIds.length);
      for (let start = 0; start < rest.length; start += READ_BATCH) {
        const batch = rest.slice(start, start + READ_BATCH);
        const { vectors } = await this.readVectors(
          context,
          dataset.id,
          batch.map((k) => imageIds[k]),
          sample.dims,
        );
        const placed = await layout.place(vectors);
        batch.forEach((k, i) => {
          xy.set(placed.xy.subarray(2 * i, 2 * i + 2), 2 * k);
          islands[k] = placed.islands[i];
        });
        progress(100 * share + (100 * (1 - share) * (start + batch.length)) / rest.length);
      }
    } finally {
      await layout.close();
    }
    await em.transactional(async (tx) => {
      await context.confirmHeld(tx);
      await saveLayout(tx, {
        datasetId: dataset.id,
        workspaceId: dataset.workspace.id,
        modelId,
        digest,
        imageIds,
        xy,
        islands,
      });
    });
    return imageIds.length;
  }

  /** The images' vectors, in their order, in one float32 buffer (dims: the vectors' length, 0 when there are none). */
  private async readVectors(
    context: JobContext,
    datasetId: string,
    imageIds: string[],
    knownDims = 0,
  ): Promise<{ vectors: Float32Array; dims: number }> {
    let dims = knownDims;
    let vectors = new Float32Array(imageIds.length * dims);
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
        vectors.set(
          new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + dims * 4)),
          (start + k) * dims,
        );
      });
    }
    return { vectors, dims };
  }

  /** Saves the vectors of a batch (or host chunk) in one transaction that confirms the job is held; counts and reports it. */
  private async keep(
    context: JobContext,
    dataset: Dataset,
    modelId: string,
    targets: TargetImage[],
    embeddings: Embedding[],
    state: AnalysisProgress,
    counts: { embedded: number },
  ): Promise<void> {
    const rows: NewEmbedding[] = [];
    embeddings.forEach((embedding, index) => {
      const image = targets[index];
      if (embedding instanceof Float32Array) rows.push({ imageId: image.id, hash: image.hash, vector: embedding });
      else if (embedding.error !== MISSING) {
        state.failedInference += 1;
        context.log.warn({ imageId: image.id, reason: embedding.error }, 'dataset analysis could not embed an image');
      }
    });
    await context.em.transactional(async (tx) => {
      await context.confirmHeld(tx);
      await saveEmbeddings(tx, dataset.id, modelId, rows);
    });
    counts.embedded += rows.length;
    state.processed += targets.length;
    // Images added meanwhile are embedded too: the total grows with them.
    state.total = Math.max(state.total, state.processed);
    state.percent = Math.min(99, Math.floor((state.processed * 100) / state.total));
    context.progress({ ...state });
  }

  /**
   * Embeds the stale images after `after` on this control plane, two batches in flight: the next batch's files are read
   * and decoded while the model runs on this one and its vectors are saved, so the model is not left idle between batches.
   */
  private async embedHere(
    context: JobContext,
    datasetId: string,
    modelId: string,
    after: string,
    state: AnalysisProgress,
    keep: (targets: TargetImage[], embeddings: Embedding[]) => Promise<void>,
  ): Promise<void> {
    let next = this.startBatch(context, datasetId, modelId, after, state);
    for (;;) {
      const batch = await next;
      if (!batch) return;
      next = this.startBatch(context, datasetId, modelId, batch.targets.at(-1)!.id, state);
      // Handled here and re-thrown where it is awaited: a cancel meanwhile leaves it unawaited.
      next.catch(() => undefined);
      const embeddings = await batch.embedded;
      context.signal.throwIfAborted();
      await keep(batch.targets, embeddings);
    }
  }

  /** The next stale images after `after`, their embedding started; undefined when none is left. */
  private async startBatch(
    context: JobContext,
    datasetId: string,
    modelId: string,
    after: string,
    state: AnalysisProgress,
  ): Promise<{ targets: TargetImage[]; embedded: Promise<Embedding[]> } | undefined> {
    const targets = await staleImages(context.em, datasetId, modelId, after, BATCH);
    if (targets.length === 0) return undefined;
    context.signal.throwIfAborted();
    const embedded = this.embedBatch(targets, state);
    embedded.catch(() => undefined);
    return { targets, embedded };
  }

  /** One result per target: its vector, why it was not embedded, or MISSING (counted as a failed download). */
  private async embedBatch(targets: TargetImage[], state: AnalysisProgress): Promise<Embedding[]> {
    const files = await Promise.all(
      targets.map(async (image) => {
        const read = await openImageBytes(this.storage, {
          id: image.id,
          workspaceId: image.workspace_id,
          hash: image.hash,
          ext: image.ext,
          referenceKey: image.reference_key,
        });
        return read ? buffer(read) : undefined;
      }),
    );
    const found = files.filter((file) => file !== undefined);
    state.failedDownloads += targets.length - found.length;
    const embedded = (await this.embedder.embed(found).catch(failJob)).values();
    return files.map((file) => (file === undefined ? { error: MISSING } : embedded.next().value!));
  }

  /** A host chunk's results as the control plane's own; its failed downloads counted, its device reported. */
  private fromHost(outcome: ChunkOutcome, state: AnalysisProgress): Embedding[] {
    state.device = outcome.device;
    return outcome.embeddings.map((embedding) => {
      if (embedding instanceof Float32Array || embedding.stage === 'decode') return embedding;
      state.failedDownloads += 1;
      return { error: MISSING };
    });
  }
}

/** A result for an image whose file could not be read: already counted as a failed download. */
const MISSING = 'the image file could not be read';

/** The positions of at most `max` of `count` items, spread evenly over them, in order. */
function evenSample(count: number, max: number): number[] {
  const taken = Math.min(count, max);
  return Array.from({ length: taken }, (_, k) => Math.floor((k * count) / taken));
}

/** The positions below `count` that `taken` (ascending) does not hold. */
function complement(taken: number[], count: number): number[] {
  const rest: number[] = [];
  let next = 0;
  for (const position of [...taken, count]) {
    while (next < position) rest.push(next++);
    next = position + 1;
  }
  return rest;
}

/** No model to run is the operator's to fix: the job's error says what to do. */
function failJob(error: unknown): never {
  throw error instanceof EmbedderUnavailable ? new JobFailure(error.message) : error;
}
