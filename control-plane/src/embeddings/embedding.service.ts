import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import { Conflict, Unavailable } from '../http/errors.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { ActiveJobExists, enqueueJob } from '../jobs/job-queue.ts';
import type { AnalysisCancelled, AnalysisQueued, EmbeddingsSummary } from './embedding.schemas.ts';
import { activeAnalysis, datasetEmbeddingCounts, EMBEDDINGS_JOB, lastAnalyzedAt } from './embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from './image-embedder.ts';

const IN_PROGRESS = 'An analysis of this dataset is already in progress; wait for it or cancel it (DELETE on the same path)';

/** Dataset analysis: admission, its summary, cancel. The work is EmbeddingJob's. */
export class EmbeddingService {
  private readonly em: EntityManager;
  private readonly lifecycle: JobLifecycle;
  private readonly embedder: ImageEmbedder;

  constructor(em: EntityManager, deps: { lifecycle: JobLifecycle; embedder: ImageEmbedder }) {
    this.em = em;
    this.lifecycle = deps.lifecycle;
    this.embedder = deps.embedder;
  }

  /** Queues an analysis (409 while one is active, 503 when this appliance has no embedder to run). */
  async start(actor: Actor, owner: string, slug: string): Promise<z.input<typeof AnalysisQueued>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    await this.embedder.modelId().catch((error: unknown) => {
      throw error instanceof EmbedderUnavailable ? Unavailable(error.message) : error;
    });
    if (await activeAnalysis(this.em, dataset.id)) throw Conflict(IN_PROGRESS);
    try {
      const job = await this.em.transactional((em) =>
        enqueueJob(em, { kind: EMBEDDINGS_JOB, workspaceId: dataset.workspace.id, subjectId: dataset.id, payload: {}, exclusive: true }),
      );
      return { jobId: job.id };
    } catch (error) {
      if (error instanceof ActiveJobExists) throw Conflict(IN_PROGRESS);
      throw error;
    }
  }

  async summary(actor: Actor, owner: string, slug: string): Promise<z.input<typeof EmbeddingsSummary>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    // Without a model to run, every current vector counts (the last one configured made them).
    const modelId = await this.embedder.modelId().catch(() => null);
    const [counts, analyzedAt, active] = await Promise.all([
      datasetEmbeddingCounts(this.em, dataset.id, modelId),
      lastAnalyzedAt(this.em, dataset.id),
      activeAnalysis(this.em, dataset.id),
    ]);
    return {
      analyzedAt: isoOrNull(analyzedAt),
      embeddingsCount: counts.embeddings,
      latestImageAt: isoOrNull(counts.latestImageAt),
      activeJob: active
        ? {
            id: active.id,
            status: active.status === 'queued' ? 'queued' : 'running',
            progress: active.progress?.stage === 'embedding' ? { percent: 0, ...active.progress, stage: 'embedding' } : null,
            createdAt: new Date(active.created_at).toISOString(),
          }
        : null,
    };
  }

  /** Cancels the active analysis (it stops after the batch in hand; what it embedded is kept). */
  async cancel(actor: Actor, owner: string, slug: string): Promise<z.input<typeof AnalysisCancelled>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    const active = await activeAnalysis(this.em, dataset.id);
    const cancelled = active && (await this.lifecycle.requestCancel(this.em, active.id));
    return { cancelled: cancelled ? active.id : null };
  }
}

/** Timestamps read by hand-written SQL come back as strings or dates. */
function isoOrNull(at: Date | string | null): string | null {
  return at === null ? null : new Date(at).toISOString();
}
