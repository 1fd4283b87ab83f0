import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { DatasetReference } from '../datasets/dataset.entity.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import { guardedFetch, OutboundError, type OutboundPolicy } from '../net/guarded-fetch.ts';
import type { Storage } from '../storage/storage.ts';

/**
 * Where an ingest job finds its file: an upload in the blob store, or a URL; or, for a reference, the storage it
 * indexes in place (`filename`: `bucket/prefix`, for messages and the dataset's source).
 */
export type IngestSource =
  | { kind: 'upload'; objectKey: string; filename: string }
  | { kind: 'url'; url: string; filename: string }
  | { kind: 'reference'; reference: DatasetReference; filename: string };
export type FileSource = Exclude<IngestSource, { kind: 'reference' }>;

/** The largest source file fetched; extraction limits bound what it may expand to. */
export const MAX_SOURCE_BYTES = 64 * 2 ** 30;

/**
 * A local file holding the source: an upload on the disk store is used where it lies; anything else is
 * streamed to `file` (never into memory). Returns the path to read.
 */
export async function fetchSource(
  source: FileSource,
  storage: Storage,
  policy: OutboundPolicy,
  file: string,
  signal: AbortSignal,
): Promise<string> {
  if (source.kind === 'upload') {
    const local = storage.store.localPath(source.objectKey);
    if (local && (await storage.store.head(source.objectKey))) return local;
    const blob = await storage.store.get(source.objectKey);
    if (!blob) throw new JobFailure('The uploaded file no longer exists; upload it again');
    await pipeline(blob.stream, createWriteStream(file), { signal });
    return file;
  }
  try {
    const response = await guardedFetch(source.url, { policy, signal, maxBytes: MAX_SOURCE_BYTES });
    await pipeline(response.body, createWriteStream(file), { signal });
  } catch (error) {
    signal.throwIfAborted();
    if (!(error instanceof OutboundError)) throw error;
    throw new JobFailure(
      error.kind === 'too-large'
        ? `The file at sourceUrl is ${error.message}`
        : `Could not download ${source.url}: ${error.message}`,
    );
  }
  return file;
}

/** The file name a URL names (for its kind), without the query string. */
export function filenameOfUrl(url: string): string {
  return decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
}
