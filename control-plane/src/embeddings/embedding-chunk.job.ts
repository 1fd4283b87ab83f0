import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  EMBED_COMMAND,
  EMBED_ENV,
  EMBED_FILES,
  INFERENCE_SERVER,
  type EmbedManifest,
} from '@vp/inference-server/contract';
import type { JobSpec } from '@vp/protocol';
import { hostRunsService } from '../workers/host.store.ts';
import { imageFileUrl } from '../images/image-bytes.ts';
import { MAX_IMAGE_BYTES } from '../ingest/ingest-staging.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import { isRunningAttempt } from '../jobs/job.store.ts';
import type { HostJobAttempt, HostJobKind } from '../scheduler/host-job-kinds.ts';
import type { Storage } from '../storage/storage.ts';
import type { TargetImage } from './embeddings.store.ts';

export const EMBEDDING_CHUNK_JOB = 'embedding-chunk';
/** The job's outputs, under these names in job_outputs. */
export const CHUNK_OUTPUTS = { result: 'embeddings', vectors: 'vectors' } as const;
/** The model's and images' download URLs (a queued chunk may wait for its host a while). */
const URL_SECONDS = 6 * 3600;
/** A chunk that runs longer is stopped by its host (its analysis then embeds it on the control plane, or fails). */
const TIMEOUT_SECONDS = 3600;
const MODEL_FILE = 'model.onnx';
const MANIFEST_FILE = 'manifest.json';

/** What a chunk carries to its host; queued by the analysis (host-embedding.ts). */
export interface ChunkPayload {
  /** The analysis job waiting for it, and its attempt (JobContext.attempt). */
  analysisJobId: string;
  analysisAttempt: number;
  /** The embedder's ONNX file in storage (by content: embedderKey). */
  modelKey: string;
  mean: [number, number, number];
  std: [number, number, number];
  images: TargetImage[];
}

/** Where worker hosts download the embedder from: one object per file content. */
export const embedderKey = (sha256: string) => `embedders/${sha256}.onnx`;
/** The manifests of a chunk's attempts, removed when it ends. */
const manifestPrefix = (attempt: { workspaceId: string; id: string }) =>
  `ws/${attempt.workspaceId}/jobs/${attempt.id}/inputs/`;

/**
 * A chunk of a dataset analysis on a worker host: the inference server's embed command (the inference environment
 * deployments run in) on the embedder and a manifest of the chunk's images, both downloaded by signed URLs; CUDA when
 * the scheduler gave it a GPU. Its outputs (EMBED_FILES) are read and saved by the analysis that queued it.
 */
export class EmbeddingChunkJob implements HostJobKind {
  private readonly storage: Storage;

  constructor(storage: Storage) {
    this.storage = storage;
  }

  async spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec> {
    const payload = attempt.payload as unknown as ChunkPayload;
    // An analysis whose process died is taken again and queues chunks of its own: this one's vectors would go unread.
    const analysis = await isRunningAttempt(em, payload.analysisJobId, payload.analysisAttempt);
    if (!analysis) throw new JobFailure('Its dataset analysis is no longer running');
    // Placement knows no environments: a host that cannot run the inference server fails the chunk here, not in a pull.
    if (!(await hostRunsService(em, attempt.hostId, 'inference')))
      throw new JobFailure(`Its host ${attempt.hostId} does not run the inference environment`);
    // Signed per attempt, so a chunk that waited long or moved to another host gets fresh URLs.
    const url = (key: string, filename?: string) =>
      this.storage.urls.download(key, { expiresInSeconds: URL_SECONDS, ...(filename && { filename }) });
    const imageUrlOf = (image: TargetImage) =>
      imageFileUrl(
        this.storage.urls,
        {
          id: image.id,
          workspaceId: image.workspace_id,
          hash: image.hash,
          ext: image.ext,
          referenceKey: image.reference_key,
        },
        { expiresInSeconds: URL_SECONDS },
      );
    const manifest: EmbedManifest = {
      images: await Promise.all(payload.images.map(async (image) => ({ url: await imageUrlOf(image) }))),
    };
    const body = Buffer.from(JSON.stringify(manifest));
    const manifestKey = `${manifestPrefix(attempt)}${attempt.attempt}/${MANIFEST_FILE}`;
    await this.storage.store.put(manifestKey, Readable.from([body]), {
      contentType: 'application/json',
      expectedBytes: body.length,
      createOnly: false,
    });
    const onGpu = attempt.gpuIndexes.length > 0;
    return {
      environment: 'inference',
      command: [INFERENCE_SERVER, EMBED_COMMAND],
      env: {
        [EMBED_ENV.model]: MODEL_FILE,
        [EMBED_ENV.manifest]: MANIFEST_FILE,
        [EMBED_ENV.device]: onGpu ? 'cuda' : 'cpu',
        [EMBED_ENV.mean]: payload.mean.join(','),
        [EMBED_ENV.std]: payload.std.join(','),
        // The largest image ingest keeps: the control plane's own path embeds every image it could read.
        [EMBED_ENV.maxBytes]: String(MAX_IMAGE_BYTES),
      },
      workDir: `embeddings/${attempt.id}/${attempt.attempt}`,
      gpus: { count: onGpu ? 1 : 0 },
      timeoutSeconds: TIMEOUT_SECONDS,
      inputs: [
        { url: await url(payload.modelKey, MODEL_FILE), path: MODEL_FILE },
        { url: await url(manifestKey, MANIFEST_FILE), path: MANIFEST_FILE },
      ],
      outputs: [
        { path: EMBED_FILES.result, name: CHUNK_OUTPUTS.result },
        { path: EMBED_FILES.vectors, name: CHUNK_OUTPUTS.vectors },
      ],
    };
  }

  /** Its manifests go; its outputs stay for the analysis to read (it removes them, or the orphan sweep does). */
  async ended(_em: EntityManager, attempt: HostJobAttempt): Promise<void> {
    for await (const { key } of this.storage.store.list(manifestPrefix(attempt))) await this.storage.store.delete(key);
  }
}
