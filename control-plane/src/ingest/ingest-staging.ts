import { availableParallelism } from 'node:os';
import { basename, join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { insertStagedImages, stagedEntryPaths } from './staged-image.store.ts';
import { Batcher } from '../db/batcher.ts';
import { ByteBudget } from '../images/byte-budget.ts';
import { withFacesBlurred } from '../faces/face-blur-image.ts';
import type { FaceDetector } from '../faces/face-detector.ts';
import { decodeImage, type DecodedImage, type ImageFile } from '../images/image-decode.ts';
import { storeImageFiles, type ObjectRecord } from '../images/image-intake.ts';
import type { JobContext } from '../jobs/job-runner.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import type { Storage } from '../storage/storage.ts';
import { recordImageObjects } from '../storage/stored-object.store.ts';
import type { ArchiveFiles } from './archive/extract.ts';
import type { IngestPlan, PlanItem } from './formats/plan.ts';
import { fetchImage } from './ingest-image-url.ts';

const MiB = 2 ** 20;
/** Larger single images are skipped with a reason (not decoded). */
export const MAX_IMAGE_BYTES = 512 * MiB;
/**
 * Files up to this size are read into memory; larger ones are decoded and stored from a local file
 * (where a TAR was extracted; a ZIP entry is extracted for it), never read whole.
 */
export const IN_MEMORY_IMAGE_BYTES = 16 * MiB;
/**
 * Image files one ingest holds in memory at once, whatever the archive holds and however many workers run;
 * what decoding them takes is bounded apart, per process (image-decode.ts).
 */
const IMAGE_BUFFER_BYTES = 64 * MiB;
/** An undecodable file larger than this is skipped rather than kept as an image with an error: it is junk, not a broken photo. */
const MAX_UNDECODABLE_BYTES = 4 * MiB;
const STAGED_PER_INSERT = 100;

export interface StagingOutcome {
  staged: number;
  /** Items that never became images, with why (unreadable, too large, download failed). */
  skipped: Array<{ path: string; reason: string }>;
}

interface StagedRow {
  item: PlanItem;
  position: number;
  file: KnownFile;
  facesBlurred: boolean;
  version: string | null;
}

/** Where staging finds each item's bytes, and what it keeps of them. */
export interface ItemReader {
  /** The item's size when known before reading (archive entries, listed objects); 0 when not. */
  sizeOf(item: PlanItem): number;
  /** The item's bytes: in memory, or a local file for one over IN_MEMORY_IMAGE_BYTES; or why it is skipped. */
  read(item: PlanItem, size: number, spillFile: string): Promise<ImageFile | string>;
  /** An item decoded by an earlier ingest and unchanged since (a re-sync): staged as it was, not read again. */
  known?(item: PlanItem): KnownFile | undefined;
  /** Indexed in place: only the thumbnail is stored, the original bytes stay where they are. */
  inPlace?: boolean;
  /** The version of the object an item is read from, staged with it (indexed in place). */
  versionOf?(item: PlanItem): string | null;
}

export type KnownFile = Omit<DecodedImage, 'thumbnail'>;

/** Items of an archive (read from it by path) or of an NDJSON file (fetched from their `url`). */
export function fileReader(archive: ArchiveFiles | undefined, policy: OutboundPolicy, signal: AbortSignal): ItemReader {
  const sizes = new Map(archive?.files.map((file) => [file.path, file.size]));
  return {
    sizeOf: (item) => sizes.get(item.path) ?? 0,
    async read(item, size, spillFile) {
      if (item.url)
        return fetchImage(item.url, {
          policy,
          signal,
          maxBytes: MAX_IMAGE_BYTES,
          inMemoryBytes: IN_MEMORY_IMAGE_BYTES,
          spillFile,
        });
      if (!archive) return 'no "url" to download it from'; // an NDJSON record without one
      if (size > MAX_IMAGE_BYTES) return `larger than ${MAX_IMAGE_BYTES} bytes`;
      if (size > IN_MEMORY_IMAGE_BYTES) return { path: await archive.localFile(item.path), bytes: size };
      return archive.read(item.path);
    },
  };
}

/**
 * The bytes of the ingest's in-memory budget an item holds while it is staged: a file read into memory. A URL's
 * image is not counted: fetchImage holds at most IN_MEMORY_IMAGE_BYTES of it (larger ones go to a file), one per worker.
 */
const inMemoryBytes = (item: PlanItem, size: number): number => (item.url || size > IN_MEMORY_IMAGE_BYTES ? 0 : size);

/**
 * Decodes and stores every image of the plan, a few at a time, and records each as a staged row. Memory
 * stays bounded whatever the archive holds: at most IMAGE_BUFFER_BYTES of files in memory, larger files
 * read from disk, decoding within the process's budget (image-decode.ts). Items staged by an earlier
 * attempt of the same job are skipped: a restarted job resumes. The dataset itself is not touched here. With a
 * `faces` detector (the dataset has blurFaces) what is stored has its faces blurred, and an image whose faces cannot
 * be checked is skipped.
 */
export async function stageImages(
  context: JobContext,
  storage: Storage,
  spillDir: string,
  plan: IngestPlan,
  reader: ItemReader,
  faces?: FaceDetector,
): Promise<StagingOutcome> {
  const { em, signal } = context;
  const done = new Set(await stagedEntryPaths(em, context.id));
  const todo = plan.items.map((item, position) => ({ item, position })).filter(({ item }) => !done.has(item.path));
  const skipped: StagingOutcome['skipped'] = [];
  const total = plan.items.length;
  let processed = done.size;
  let pending: StagedRow[] = [];
  const flush = async () => {
    const rows = pending;
    pending = [];
    if (rows.length) await insertStaged(em, context.id, rows);
  };
  const inMemoryFiles = new ByteBudget(IMAGE_BUFFER_BYTES);
  // The workers' storage records, one statement for those that come while one is written (not one commit per image).
  const records = new Batcher<ObjectRecord[], void>(async (batches) => {
    await recordImageObjects(em, context.workspaceId, batches.flat());
    return batches.map(() => undefined);
  });
  const record = (objects: ObjectRecord[]) => records.submit(objects);
  /** Reads, decodes and stores one item, or says why it is skipped. */
  const stage = async (item: PlanItem, position: number, size: number): Promise<void> => {
    const version = reader.versionOf?.(item) ?? null;
    const known = reader.known?.(item);
    if (known) return void pending.push({ item, position, file: known, facesBlurred: false, version });
    const bytes = await reader.read(item, size, join(spillDir, `url-${position}`));
    if (typeof bytes === 'string') return void skipped.push({ path: item.path, reason: bytes });
    const name = basename(item.path);
    const file = await decodeImage(bytes, name);
    if (file.error && file.bytes > MAX_UNDECODABLE_BYTES) {
      return void skipped.push({
        path: item.path,
        reason: `undecodable and larger than ${MAX_UNDECODABLE_BYTES / MiB} MiB: ${file.error}`,
      });
    }
    const stored = faces ? await withFacesBlurred(faces, bytes, file, name) : { body: bytes, file };
    if ('skip' in stored) return void skipped.push({ path: item.path, reason: stored.skip });
    await storeImageFiles(em, storage, context.workspaceId, stored.file, reader.inPlace ? null : stored.body, record);
    pending.push({ item, position, file: stored.file, facesBlurred: faces !== undefined, version });
  };
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < todo.length && !failed) {
      signal.throwIfAborted();
      const { item, position } = todo[next++];
      const size = reader.sizeOf(item);
      await inMemoryFiles.with(inMemoryBytes(item, size), () => stage(item, position, size));
      if (pending.length >= STAGED_PER_INSERT) await flush();
      processed += 1;
      context.progress({
        stage: 'processing',
        percent: 15 + Math.floor((80 * processed) / Math.max(total, 1)),
        processed,
        total,
      });
    }
  };
  // Twice the cores: while one image waits on the store or the database, another is being decoded.
  const workers = Array.from({ length: Math.min(2 * availableParallelism(), Math.max(todo.length, 1)) }, () =>
    worker().catch((error: unknown) => {
      failed = true; // the other workers stop at their next item
      throw error;
    }),
  );
  // Every worker has stopped before the job goes on (or fails and cleans up).
  const failure = (await Promise.allSettled(workers)).find((outcome) => outcome.status === 'rejected');
  if (failure) {
    // What was stored before the failure is staged, so discarding the attempt releases it (a thumbnail of an image
    // read in place has no original the hourly sweep would find it by).
    await flush().catch(() => undefined);
    throw failure.reason;
  }
  await flush();
  return { staged: processed - skipped.length, skipped };
}

async function insertStaged(em: EntityManager, jobId: string, rows: StagedRow[]): Promise<void> {
  await insertStagedImages(
    em,
    jobId,
    rows.map(({ item, position, file, facesBlurred, version }) => ({
      entryPath: item.path,
      position,
      hash: file.hash,
      ext: file.ext,
      name: basename(item.path).slice(0, 256),
      width: file.width,
      height: file.height,
      channels: file.channels,
      bytes: file.bytes,
      error: file.error,
      split: item.split ?? 'train',
      labels: item.labelError ? [] : item.labels,
      metadata: item.metadata ?? {},
      facesBlurred,
      referenceVersion: version,
    })),
  );
}
