import { rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EntityManager } from '@mikro-orm/postgresql';
import { discardStagedImages } from './staged-image.store.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import { Dataset, type DatasetReference } from '../datasets/dataset.entity.ts';
import { HttpError } from '../http/errors.ts';
import type { IntegrationAccess } from '../integrations/integration-access.ts';
import { ProviderError } from '../integrations/providers/provider.ts';
import { FaceDetectorMissing, type FaceDetector } from '../faces/face-detector.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import type { Storage } from '../storage/storage.ts';
import { ArchiveError, archiveKindOf, openArchive, type ArchiveFiles } from './archive/extract.ts';
import { planArchive } from './formats/detect.ts';
import { planNdjson } from './formats/ndjson.ts';
import { DatasetFileError, type IngestPlan } from './formats/plan.ts';
import { commitIngest } from './ingest-commit.ts';
import type { IngestPayload } from './ingest-payload.ts';
import { fetchSource, type FileSource } from './ingest-source.ts';
import { fileReader, stageImages, type ItemReader } from './ingest-staging.ts';
import { commitReference } from './reference/reference-commit.ts';
import { planReference } from './reference/reference-plan.ts';
import { openReference } from './reference/reference-storage.ts';
import { makeWorkDir, removeJobWorkDirs, sweepWorkDirs } from './ingest-workdir.ts';

/**
 * An ingest: fetch the file → extract (archives) → plan (format detection, labels) → stage every image
 * (decoded and stored, the dataset untouched) → commit all at once. A failed or cancelled ingest leaves
 * the dataset as it was: staged rows are dropped and bytes nothing uses are deleted.
 */
export class IngestJob implements JobHandler {
  private readonly storage: Storage;
  private readonly outbound: OutboundPolicy;
  private readonly workRoot: string;
  private readonly faces: FaceDetector;

  private readonly access: IntegrationAccess;
  private readonly countSourceBytes: (bytes: number) => void;

  /**
   * `outbound`: where sourceUrl and NDJSON image URLs may be downloaded from; `faces` blurs them in datasets with blurFaces;
   * `access` opens the storage integrations that ingests by reference index; `countSourceBytes` is told the size of
   * each file read (the metrics).
   */
  constructor(
    storage: Storage,
    outbound: OutboundPolicy,
    faces: FaceDetector,
    access: IntegrationAccess,
    countSourceBytes: (bytes: number) => void = () => undefined,
    workRoot = tmpdir(),
  ) {
    this.countSourceBytes = countSourceBytes;
    this.storage = storage;
    this.access = access;
    this.outbound = outbound;
    this.faces = faces;
    this.workRoot = workRoot;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const payload = context.payload as unknown as IngestPayload;
    // This attempt takes over from earlier ones whose process died: what they left here goes now.
    await removeJobWorkDirs(this.workRoot, context.id, context.attempt);
    const work = await makeWorkDir(this.workRoot, context.id, context.attempt);
    // Seconds per stage, reported with the result: where an ingest spends its time.
    const seconds: Record<string, number> = {};
    let mark = performance.now();
    const lap = (stage: string) => {
      seconds[stage] = Math.round(performance.now() - mark) / 1000;
      mark = performance.now();
    };
    let archive: ArchiveFiles | undefined;
    try {
      context.progress({ stage: 'downloading', percent: 0 });
      const source = payload.source;
      const opened =
        source.kind === 'reference'
          ? await this.planReference(context, payload, source.reference)
          : await this.planFile(context, payload, source, work);
      const { plan, reader } = opened;
      archive = opened.archive;
      lap('extract');
      context.progress({ stage: 'processing', percent: 15, processed: 0, total: plan.items.length });
      // A connected dataset never blurs faces (its files are read in place; checkConnectable refuses it).
      const blur =
        source.kind !== 'reference' && (await context.em.findOneOrFail(Dataset, payload.datasetId)).blurFaces;
      if (blur) this.faces.requireModel();
      const staging = await stageImages(context, this.storage, work, plan, reader, blur ? this.faces : undefined);
      lap('process');
      context.signal.throwIfAborted();
      context.progress({ stage: 'committing', percent: 95, processed: plan.items.length, total: plan.items.length });
      const outcome =
        source.kind === 'reference'
          ? await commitReference(context, plan, payload, source.reference)
          : await commitIngest(context, plan, payload);
      await releaseImageBlobs(context.em, this.storage, context.workspaceId, outcome.replaced);
      lap('commit');
      const { replaced: _replaced, ...counts } = outcome;
      plan.skipped.addAll(staging.skipped);
      return { format: plan.format, task: plan.task, ...counts, ...plan.skipped.summary(), seconds };
    } catch (error) {
      if (
        error instanceof ArchiveError ||
        error instanceof DatasetFileError ||
        error instanceof FaceDetectorMissing ||
        error instanceof ProviderError
      )
        throw new JobFailure(error.message);
      throw error;
    } finally {
      await archive?.close();
      await rm(work, { recursive: true, force: true });
    }
  }

  /** An archive or NDJSON file: downloaded (or found where it was uploaded), then planned. */
  private async planFile(
    context: JobContext,
    payload: IngestPayload,
    source: FileSource,
    work: string,
  ): Promise<{ plan: IngestPlan; reader: ItemReader; archive?: ArchiveFiles }> {
    const file = await fetchSource(source, this.storage, this.outbound, join(work, 'source'), context.signal);
    this.countSourceBytes((await stat(file)).size);
    const { plan, archive } = await this.plan(context, payload, file, join(work, 'files'));
    return { plan, archive, reader: fileReader(archive, this.outbound, context.signal) };
  }

  /** Connected storage: listed and planned in place (ingest/reference). */
  private async planReference(
    context: JobContext,
    payload: IngestPayload,
    reference: DatasetReference,
  ): Promise<{ plan: IngestPlan; reader: ItemReader; archive?: undefined }> {
    const opened = await openReference(context.em, this.access, context.workspaceId, reference).catch(
      (error: unknown) => {
        throw error instanceof HttpError ? new JobFailure(error.message) : error;
      },
    );
    const planned = await planReference(context.em, payload.datasetId, opened, context.signal, (objects) =>
      context.progress({ stage: 'listing', percent: 5, objects }),
    );
    return { ...planned, plan: nonEmpty(planned.plan, payload) };
  }

  /** The plan, and the archive its images are read from (none for NDJSON: its images are fetched by URL). */
  private async plan(
    context: JobContext,
    payload: IngestPayload,
    file: string,
    filesDir: string,
  ): Promise<{ plan: IngestPlan; archive?: ArchiveFiles }> {
    const kind = archiveKindOf(payload.source.filename);
    if (!kind) throw new JobFailure(`${payload.source.filename}: not a .zip, .tar, .tar.gz, .tgz or .ndjson file`);
    context.progress({ stage: 'extracting', percent: 5 });
    if (kind === 'ndjson') return { plan: nonEmpty(await planNdjson(file, payload.source.filename), payload) };
    const archive = await openArchive(file, kind, filesDir, { signal: context.signal });
    try {
      context.progress({ stage: 'planning', percent: 12 });
      const plan = await planArchive(archive, archive.files);
      plan.skipped.addAll(archive.skipped);
      return { plan: nonEmpty(plan, payload), archive };
    } catch (error) {
      await archive.close();
      throw error;
    }
  }

  /** Deletes the work folders of attempts whose process died (see sweepWorkDirs). */
  sweepWorkDirs(em: EntityManager): Promise<number> {
    return sweepWorkDirs(em, this.workRoot);
  }

  /** Deletes the folders its attempts left here (another machine's wait for that replica's start or hourly sweep). */
  abandoned(jobId: string): Promise<void> {
    return removeJobWorkDirs(this.workRoot, jobId);
  }

  /** Drops what the attempt staged and deletes the bytes no image, version or other job uses, and its attempts' folders here. */
  async discard(context: JobContext): Promise<void> {
    await removeJobWorkDirs(this.workRoot, context.id);
    const staged = await discardStagedImages(context.em, context.id);
    await releaseImageBlobs(context.em, this.storage, context.workspaceId, staged);
  }
}

function nonEmpty(plan: IngestPlan, payload: IngestPayload): IngestPlan {
  if (plan.items.length === 0) throw new JobFailure(`No images found in ${payload.source.filename}`);
  return plan;
}
