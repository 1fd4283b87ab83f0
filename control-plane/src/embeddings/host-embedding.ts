// The host path of dataset analysis: the stale images in chunks (EmbeddingChunkJob) on worker hosts, a few queued at
// a time, each read back and saved when it ends. Where it runs is the scheduler's: chunks ask for a GPU when a
// connected host has a free one, and are placed like any host job.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmbeddingPlacement } from '@vp/config';
import { MAX_EMBED_IMAGES } from '@vp/inference-server/contract';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { enqueueJob } from '../jobs/job-queue.ts';
import { endedOrStaleQueuedJobs } from '../jobs/job.store.ts';
import { JobFailure, type JobContext } from '../jobs/job-runner.ts';
import { ANY_GPU, someHostOffers } from '../scheduler/host-offers.ts';
import { BlobExists } from '../storage/blob-store.ts';
import type { Storage } from '../storage/storage.ts';
import { ChunkOutputInvalid, readChunkOutput, removeChunkOutputs, type ChunkOutcome } from './chunk-output.ts';
import { EMBEDDING_CHUNK_JOB, embedderKey, type ChunkPayload } from './embedding-chunk.job.ts';
import { modelDims, staleImages, type TargetImage } from './embeddings.store.ts';
import type { EmbedderModel } from './image-embedder.ts';

/** Images per chunk: one model load per chunk on its host. */
const CHUNK = MAX_EMBED_IMAGES;
/** Chunks queued or running at once: the next waits ready while one runs, and a host with several GPUs takes several. */
const WINDOW = 4;
/** Under auto, a chunk no host took this long (its GPU was taken meanwhile) hands the analysis to the control plane. */
const QUEUED_SECONDS = 120;
/** How often the analysis looks at its chunks. */
const POLL_MS = 500;

/** The host path cannot go on (a chunk failed, was cancelled or left a bad output): the control plane takes over, or the analysis fails. */
export class HostPathFailed extends Error {}

export interface HostRun {
  datasetId: string;
  workspaceId: string;
  model: EmbedderModel;
  modelId: string;
  gpuCount: number;
  /** Keeps one ended chunk's vectors (and counts its failures), in a transaction that confirms the analysis is held. */
  keep(targets: TargetImage[], outcome: ChunkOutcome): Promise<void>;
}

export class HostEmbedding {
  readonly placement: EmbeddingPlacement;
  private readonly storage: Storage;
  private readonly lifecycle: JobLifecycle;
  private readonly graceSeconds: number;

  constructor(
    storage: Storage,
    lifecycle: JobLifecycle,
    options: { placement: EmbeddingPlacement; graceSeconds: number },
  ) {
    this.storage = storage;
    this.lifecycle = lifecycle;
    this.placement = options.placement;
    this.graceSeconds = options.graceSeconds;
  }

  /**
   * The GPUs each chunk asks for when the analysis goes to hosts, or null for the control plane: auto takes hosts only
   * when a live host the workspace may use has a GPU no job holds and runs the inference environment; hosts takes a GPU
   * host, else any host's CPU slot, and fails the analysis when none is connected.
   */
  async choose(em: EntityManager, workspaceId: string): Promise<{ gpuCount: number } | null> {
    if (this.placement === 'control-plane') return null;
    if (
      await someHostOffers(
        em,
        workspaceId,
        { gpuType: ANY_GPU, freeGpu: true, service: 'inference' },
        this.graceSeconds,
      )
    )
      return { gpuCount: 1 };
    if (this.placement === 'auto') return null;
    if (await someHostOffers(em, workspaceId, { gpuType: 'cpu', service: 'inference' }, this.graceSeconds))
      return { gpuCount: 0 };
    throw new JobFailure('EMBEDDING_PLACEMENT is hosts, but no connected worker host runs the inference environment');
  }

  /**
   * Embeds the stale images on hosts, in id order, until none is left; returns the last image id it covered. A chunk
   * that fails is HostPathFailed; on the way out (a cancel, a failure) the chunks still queued or running are cancelled.
   */
  async run(context: JobContext, run: HostRun): Promise<string> {
    const { em } = context;
    const modelKey = await this.upload(run.model);
    let dims = await modelDims(em, run.modelId);
    const inFlight = new Map<string, TargetImage[]>();
    let after = '';
    let exhausted = false;
    try {
      for (;;) {
        while (!exhausted && inFlight.size < WINDOW) {
          const targets = await staleImages(em, run.datasetId, run.modelId, after, CHUNK);
          if (targets.length === 0) exhausted = true;
          else {
            after = targets.at(-1)!.id;
            inFlight.set(await this.queue(context, run, modelKey, targets), targets);
          }
        }
        if (inFlight.size === 0) return after;
        await sleep(POLL_MS, undefined, { signal: context.signal }).catch(() => context.signal.throwIfAborted());
        const ended = await endedOrStaleQueuedJobs(em, [...inFlight.keys()], this.placement === 'auto', QUEUED_SECONDS);
        for (const job of ended) {
          // Still in flight, so it is cancelled on the way out.
          if (job.status === 'queued')
            throw new HostPathFailed(`no host took its host job ${job.id} within ${QUEUED_SECONDS} s`);
          const targets = inFlight.get(job.id)!;
          inFlight.delete(job.id);
          try {
            if (job.status !== 'completed')
              throw new HostPathFailed(`its host job ${job.id} ${job.status}${job.error ? `: ${job.error}` : ''}`);
            const outcome = await readChunkOutput(em, this.storage, job.id, targets.length, dims).catch(
              (error: unknown) => {
                throw error instanceof ChunkOutputInvalid
                  ? new HostPathFailed(`its host job ${job.id} left an invalid output: ${error.message}`)
                  : error;
              },
            );
            // The first chunk of a model's first analysis sets the length the others must have.
            if (outcome.embeddings.some((embedding) => embedding instanceof Float32Array)) dims ??= outcome.dims;
            await run.keep(targets, outcome);
          } finally {
            await removeChunkOutputs(em, this.storage, job.id).catch((error) =>
              context.log.warn({ err: error, jobId: job.id }, "removing an embedding chunk's outputs failed"),
            );
          }
        }
      }
    } finally {
      for (const jobId of inFlight.keys())
        await this.lifecycle
          .requestCancel(em, jobId)
          .catch((error) => context.log.warn({ err: error, jobId }, 'cancelling an embedding chunk failed'));
    }
  }

  private async queue(context: JobContext, run: HostRun, modelKey: string, images: TargetImage[]): Promise<string> {
    const payload: ChunkPayload = {
      analysisJobId: context.id,
      analysisAttempt: context.attempt,
      modelKey,
      mean: run.model.mean,
      std: run.model.std,
      images,
    };
    const job = await context.em.transactional((tx) =>
      enqueueJob(tx, {
        kind: EMBEDDING_CHUNK_JOB,
        workspaceId: run.workspaceId,
        subjectId: run.datasetId,
        payload: payload as unknown as Record<string, unknown>,
        // Its analysis takes a failed chunk over: no second attempt on a host.
        maxAttempts: 1,
        host: { gpuType: null, gpuCount: run.gpuCount },
      }),
    );
    return job.id;
  }

  /** The embedder's file in storage under its content digest, for hosts to download; uploaded once. */
  private async upload(model: EmbedderModel): Promise<string> {
    const key = embedderKey(model.sha256);
    if (await this.storage.store.head(key)) return key;
    const { size } = await stat(model.file);
    await this.storage.store
      .put(key, createReadStream(model.file), {
        contentType: 'application/octet-stream',
        expectedBytes: size,
        createOnly: true,
      })
      .catch((error: unknown) => {
        if (!(error instanceof BlobExists)) throw error;
      });
    return key;
  }
}
