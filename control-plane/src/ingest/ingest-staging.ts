import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';
import { decodeImage } from '../images/image-decode.ts';
import { storeImageFiles } from '../images/image-intake.ts';
import type { JobContext } from '../jobs/job-runner.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import type { Storage } from '../storage/storage.ts';
import type { ArchiveFiles } from './archive/extract.ts';
import type { IngestPlan, PlanItem, ReadFile } from './formats/plan.ts';
import { fetchImage } from './ingest-image-url.ts';

/** Larger single images are skipped with a reason (not decoded). */
export const MAX_IMAGE_BYTES = 512 * 2 ** 20;
const STAGED_PER_INSERT = 100;

export interface StagingOutcome {
  staged: number;
  /** Items that never became images, with why (unreadable, too large, download failed). */
  skipped: Array<{ path: string; reason: string }>;
}

interface StagedRow {
  item: PlanItem;
  position: number;
  file: Awaited<ReturnType<typeof decodeImage>>;
}

async function readItem(item: PlanItem, read: ReadFile | undefined, size: number | undefined, signal: AbortSignal, policy: OutboundPolicy): Promise<Buffer | string> {
  if (item.url) return fetchImage(item.url, { policy, signal, maxBytes: MAX_IMAGE_BYTES });
  if ((size ?? 0) > MAX_IMAGE_BYTES) return `larger than ${MAX_IMAGE_BYTES} bytes`;
  return read!(item.path);
}

/**
 * Decodes and stores every image of the plan, a few at a time, and records each
 * as a staged row. Items staged by an earlier attempt of the same job are skipped: a restarted job
 * resumes. The dataset itself is not touched here.
 */
export async function stageImages(context: JobContext, storage: Storage, policy: OutboundPolicy, plan: IngestPlan, archive?: ArchiveFiles): Promise<StagingOutcome> {
  const { em, signal } = context;
  const done = new Set((await query<{ entry_path: string }>(em, 'select entry_path from ingest_staged_images where job_id = ?', [context.id])).map((row) => row.entry_path));
  const todo = plan.items.map((item, position) => ({ item, position })).filter(({ item }) => !done.has(item.path));
  const skipped: StagingOutcome['skipped'] = [];
  const sizes = new Map(archive?.files.map((file) => [file.path, file.size]));
  const total = plan.items.length;
  let processed = done.size;
  let pending: StagedRow[] = [];
  const flush = async () => {
    const rows = pending;
    pending = [];
    if (rows.length) await insertStaged(em, context.id, rows);
  };
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < todo.length && !failed) {
      signal.throwIfAborted();
      const { item, position } = todo[next++];
      const bytes = await readItem(item, archive?.read, sizes.get(item.path), signal, policy);
      if (typeof bytes === 'string') skipped.push({ path: item.path, reason: bytes });
      else {
        const file = await decodeImage(bytes, basename(item.path));
        await storeImageFiles(em, storage, context.workspaceId, file, bytes);
        pending.push({ item, position, file });
        if (pending.length >= STAGED_PER_INSERT) await flush();
      }
      processed += 1;
      context.progress({ stage: 'processing', percent: 15 + Math.floor((80 * processed) / Math.max(total, 1)), processed, total });
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
  if (failure) throw failure.reason;
  await flush();
  return { staged: processed - skipped.length, skipped };
}

async function insertStaged(em: EntityManager, jobId: string, rows: StagedRow[]): Promise<void> {
  await query(
    em,
    `insert into ingest_staged_images (job_id, entry_path, position, hash, ext, name, width, height, channels, bytes, error, split, labels, metadata)
     values ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb)').join(', ')} on conflict do nothing`,
    rows.flatMap(({ item, position, file }) => [
      jobId,
      item.path,
      position,
      file.hash,
      file.ext,
      basename(item.path).slice(0, 256),
      file.width,
      file.height,
      file.channels,
      file.bytes,
      file.error,
      item.split ?? 'train',
      JSON.stringify(item.labelError ? [] : item.labels),
      JSON.stringify(item.metadata ?? {}),
    ]),
  );
}
