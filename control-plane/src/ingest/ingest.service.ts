import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { refuseConnected } from '../datasets/connected-storage.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import { Conflict, Invalid, NotFound } from '../http/errors.ts';
import type { IntegrationAccess } from '../integrations/integration-access.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { referenceSource } from './reference/reference-request.ts';
import { enqueueJob } from '../jobs/job-queue.ts';
import { UploadSession } from '../uploads/upload-session.entity.ts';
import { archiveKindOf } from './archive/extract.ts';
import { normalizeEntryPath } from './archive/safe-path.ts';
import { INGEST_JOB, type IngestPayload } from './ingest-payload.ts';
import type { IngestQueued, IngestRequest } from './ingest.schemas.ts';
import { filenameOfUrl, type IngestSource } from './ingest-source.ts';

const SUPPORTED = '.zip, .tar, .tar.gz, .tgz or .ndjson';

/** Checks an ingest request and queues its job; the job (ingest.job.ts) does the work. */
export class IngestService {
  private readonly em: EntityManager;
  private readonly access: IntegrationAccess;

  constructor(em: EntityManager, access: IntegrationAccess) {
    this.em = em;
    this.access = access;
  }

  async start(actor: Actor, owner: string, slug: string, body: IngestRequest): Promise<z.input<typeof IngestQueued>> {
    const { dataset } = await findDataset(this.em, actor, owner, slug, 'edit');
    const source = await this.source(dataset, body);
    const payload: IngestPayload = {
      datasetId: dataset.id,
      source,
      targetSplit: body.targetSplit ?? null,
      conflictPolicy: body.conflictPolicy,
      classMapping: body.classMapping ?? {},
      imageMetadata: normalizedMetadataKeys(body.imageMetadata ?? {}),
    };
    const job = await this.em.transactional((em) =>
      enqueueJob(em, {
        kind: INGEST_JOB,
        workspaceId: dataset.workspace.id,
        subjectId: dataset.id,
        payload: { ...payload },
      }),
    );
    return { jobId: job.id, status: 'queued' };
  }

  private async source(dataset: Dataset, body: IngestRequest): Promise<IngestSource> {
    if (body.reference) return referenceSource(this.em, this.access, dataset, body.reference);
    refuseConnected(dataset, 're-sync it by ingesting its reference again; other sources cannot be added');
    if (body.sessionId) return this.uploadSource(dataset.id, dataset.workspace.id, body.sessionId);
    const filename = filenameOfUrl(body.sourceUrl!);
    if (!archiveKindOf(filename)) throw Invalid(`sourceUrl: must name a ${SUPPORTED} file`);
    return { kind: 'url', url: body.sourceUrl!, filename };
  }

  /** Spec: ingest completes an upload whose complete call was skipped; a session of another dataset is refused. */
  private async uploadSource(datasetId: string, workspaceId: string, sessionId: string): Promise<IngestSource> {
    const session = await this.em.findOne(UploadSession, { id: sessionId, workspace: workspaceId });
    if (!session) throw NotFound(`Upload session ${sessionId} not found`);
    if (session.assetType !== 'datasets' || session.assetId !== datasetId)
      throw Invalid('sessionId: the upload session belongs to another dataset');
    if (session.status === 'pending') throw Conflict('No file has been uploaded for this session yet');
    if (session.status === 'uploaded') {
      session.status = 'completed';
      session.completedAt = new Date();
      await this.em.flush();
    }
    return { kind: 'upload', objectKey: session.objectKey, filename: session.filename };
  }
}

/** imageMetadata keys are archive paths as the client wrote them: normalized the way archive entries are. */
function normalizedMetadataKeys(map: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  const normalized: Record<string, Record<string, unknown>> = {};
  for (const [raw, metadata] of Object.entries(map)) {
    const entry = normalizeEntryPath(raw);
    if ('skip' in entry)
      throw Invalid(`imageMetadata: "${raw.slice(0, 80)}" is not a usable archive path (${entry.skip})`);
    normalized[entry.path] = metadata;
  }
  return normalized;
}
