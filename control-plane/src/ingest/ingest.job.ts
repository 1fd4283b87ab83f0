import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { releaseImageBlobs } from '../images/image-blobs.ts';
import { JobFailure, type JobContext, type JobHandler } from '../jobs/job-runner.ts';
import { Dataset } from '../datasets/dataset.entity.ts';
import { FaceDetectorMissing, type FaceDetector } from '../faces/face-detector.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import type { Storage } from '../storage/storage.ts';
import { ArchiveError, archiveKindOf, openArchive, type ArchiveFiles } from './archive/extract.ts';
import { planArchive } from './formats/detect.ts';
import { planNdjson } from './formats/ndjson.ts';
import { DatasetFileError, type IngestPlan } from './formats/plan.ts';
import { commitIngest } from './ingest-commit.ts';
import type { IngestPayload } from './ingest-payload.ts';
import { fetchSource } from './ingest-source.ts';
import { stageImages } from './ingest-staging.ts';
import { makeWorkDir, sweepWorkDirs } from './ingest-workdir.ts';

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

  /** `outbound`: where sourceUrl and NDJSON image URLs may be downloaded from; `faces` blurs them in datasets with blurFaces. */
  constructor(storage: Storage, outbound: OutboundPolicy, faces: FaceDetector, workRoot = tmpdir()) {
    this.storage = storage;
    this.outbound = outbound;
    this.faces = faces;
    this.workRoot = workRoot;
  }

  async run(context: JobContext): Promise<Record<string, unknown>> {
    const payload = context.payload as unknown as IngestPayload;
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
      const file = await fetchSource(payload.source, this.storage, this.outbound, join(work, 'source'), context.signal);
      lap('download');
      const opened = await this.plan(context, payload, file, join(work, 'files'));
      const { plan } = opened;
      archive = opened.archive;
      lap('extract');
      context.progress({ stage: 'processing', percent: 15, processed: 0, total: plan.items.length });
      const blur = (await context.em.findOneOrFail(Dataset, payload.datasetId)).blurFaces;
      if (blur) this.faces.requireModel();
      const staging = await stageImages(context, this.storage, this.outbound, work, plan, archive, blur ? this.faces : undefined);
      lap('process');
      context.signal.throwIfAborted();
      context.progress({ stage: 'committing', percent: 95, processed: plan.items.length, total: plan.items.length });
      const outcome = await commitIngest(context, plan, payload);
      await releaseImageBlobs(context.em, this.storage, context.workspaceId, outcome.replaced);
      lap('commit');
      const { replaced: _replaced, ...counts } = outcome;
      plan.skipped.addAll(staging.skipped);
      return { format: plan.format, task: plan.task, ...counts, ...plan.skipped.summary(), seconds };
    } catch (error) {
      if (error instanceof ArchiveError || error instanceof DatasetFileError || error instanceof FaceDetectorMissing) throw new JobFailure(error.message);
      throw error;
    } finally {
      await archive?.close();
      await rm(work, { recursive: true, force: true });
    }
  }

  /** The plan, and the archive its images are read from (none for NDJSON: its images are fetched by URL). */
  private async plan(context: JobContext, payload: IngestPayload, file: string, filesDir: string): Promise<{ plan: IngestPlan; archive?: ArchiveFiles }> {
    const kind = archiveKindOf(payload.source.filename);
    if (!kind) throw new JobFailure(`${payload.source.filename}: not a .zip, .tar, .tar.gz, .tgz or .ndjson file`);
    context.progress({ stage: 'extracting', percent: 5 });
    if (kind === 'ndjson') return { plan: nonEmpty(await planNdjson(file, payload.source.filename), payload) };
    const archive = await openArchive(file, kind, filesDir, { signal: context.signal });
    try {
      context.progress({ stage: 'planning', percent: 12 });
      const plan = await planArchive(archive.read, archive.files);
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

  /** Drops what the attempt staged and deletes the bytes no image, version or other job uses. */
  async discard(context: JobContext): Promise<void> {
    const staged = await query<{ hash: string; ext: string }>(context.em, 'delete from ingest_staged_images where job_id = ? returning hash, ext', [context.id]);
    await releaseImageBlobs(context.em, this.storage, context.workspaceId, staged);
  }
}

function nonEmpty(plan: IngestPlan, payload: IngestPayload): IngestPlan {
  if (plan.items.length === 0) throw new JobFailure(`No images found in ${payload.source.filename}`);
  return plan;
}

