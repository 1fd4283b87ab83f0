import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import { Conflict, NotFound, Unavailable } from '../http/errors.ts';
import { offsetPage } from '../http/pagination.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { ActiveJobExists, enqueueJob } from '../jobs/job-queue.ts';
import type {
  AnalysisCancelled,
  AnalysisQueued,
  ClusteringPage,
  ClusteringQuery,
  EmbeddingsSummary,
} from './embedding.schemas.ts';
import { activeAnalysis, datasetEmbeddingCounts, EMBEDDINGS_JOB, lastAnalyzedAt } from './embeddings.store.ts';
import { EmbedderUnavailable, type ImageEmbedder } from './image-embedder.ts';
import { layoutDrawingRecords, layoutHeader, layoutPoints, type LayoutHeader } from './layouts.store.ts';
import { requireProcessing } from '../datasets/connected-storage.ts';

/** Layout points read from the database at a time while the drawing records are written (3.2 MB). */
const POINTS_CHUNK = 100_000;

const IN_PROGRESS =
  'An analysis of this dataset is already in progress; wait for it or cancel it (DELETE on the same path)';

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
    await requireProcessing(this.em, dataset, 'Dataset analysis');
    await this.embedder.modelId().catch((error: unknown) => {
      throw error instanceof EmbedderUnavailable ? Unavailable(error.message) : error;
    });
    if (await activeAnalysis(this.em, dataset.id)) throw Conflict(IN_PROGRESS);
    try {
      const job = await this.em.transactional((em) =>
        enqueueJob(em, {
          kind: EMBEDDINGS_JOB,
          workspaceId: dataset.workspace.id,
          subjectId: dataset.id,
          payload: {},
          exclusive: true,
        }),
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
            progress:
              active.progress?.stage === 'embedding' || active.progress?.stage === 'umap'
                ? { percent: 0, ...active.progress, stage: active.progress.stage }
                : null,
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

  /**
   * The whole layout as drawing records (layoutDrawingRecords), POINTS_CHUNK points at a time, the next chunk read (on
   * another connection) while this one is written; 404 before the first analysis completes. A layout replaced while
   * it is read ends the stream with an error.
   */
  async layoutForDrawing(actor: Actor, owner: string, slug: string): Promise<AsyncIterable<Buffer>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const header = await this.requireLayout(dataset.id, owner, slug);
    const read = (from: number) => {
      const records = layoutDrawingRecords(
        this.em.fork(),
        dataset.id,
        from,
        Math.min(from + POINTS_CHUNK, header.points),
      );
      records.catch(() => undefined); // awaited below, unless the response was abandoned first
      return records;
    };
    const em = this.em.fork();
    return (async function* () {
      let next = header.points > 0 ? read(0) : undefined;
      for (let from = 0; next; from += POINTS_CHUNK) {
        const current = next;
        next = from + POINTS_CHUNK < header.points ? read(from + POINTS_CHUNK) : undefined;
        yield await current;
      }
      const now = await layoutHeader(em, dataset.id);
      if (now?.created_at.valueOf() !== header.created_at.valueOf())
        throw new Error('the layout was replaced while it was read');
    })();
  }

  private async requireLayout(datasetId: string, owner: string, slug: string): Promise<LayoutHeader> {
    const header = await layoutHeader(this.em, datasetId);
    if (!header)
      throw NotFound(
        `Dataset ${owner}/${slug} has no layout yet: analyze it first (POST /api/datasets/${owner}/${slug}/embeddings)`,
      );
    return header;
  }

  /** A page of the dataset's layout; 404 before its first analysis completes. */
  async clustering(
    actor: Actor,
    owner: string,
    slug: string,
    page: z.output<typeof ClusteringQuery>,
  ): Promise<z.input<typeof ClusteringPage>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'view');
    const header = await this.requireLayout(dataset.id, owner, slug);
    const { items, hasMore } = offsetPage(
      await layoutPoints(this.em, dataset.id, page.offset, page.limit + 1),
      page.limit,
    );
    return {
      images: items.map((point) => ({
        id: point.image_id,
        umapX: point.x,
        umapY: point.y,
        cluster: point.cluster,
        split: point.split,
        classIds: point.class_ids ?? [],
        width: point.width ?? 0,
        height: point.height ?? 0,
        bytes: point.bytes === null ? null : Number(point.bytes),
        labelCount: point.label_count ?? 0,
        labeled: (point.label_count ?? 0) > 0,
        missing: point.missing,
      })),
      total: header.points,
      offset: page.offset,
      limit: page.limit,
      hasMore,
      nextOffset: hasMore ? page.offset + items.length : null,
      updatedAt: new Date(header.created_at).toISOString(),
    };
  }
}

/** Timestamps read by hand-written SQL come back as strings or dates. */
function isoOrNull(at: Date | string | null): string | null {
  return at === null ? null : new Date(at).toISOString();
}
