import { createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '../storage/storage.ts';
import { JobFailure } from '../jobs/job-runner.ts';

/** Where an ingest job finds its file: an upload in the blob store, or a URL. */
export type IngestSource = { kind: 'upload'; objectKey: string; filename: string } | { kind: 'url'; url: string; filename: string };

/** The largest source file fetched; extraction limits bound what it may expand to. */
export const MAX_SOURCE_BYTES = 64 * 2 ** 30;
const CONNECT_TIMEOUT_MS = 30_000;

/** Fails the job once more than `limit` bytes have passed. */
function byteLimit(limit: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > limit) callback(new JobFailure(`${what} is larger than ${limit} bytes`));
      else callback(null, chunk);
    },
  });
}

/**
 * A local file holding the source: an upload on the disk store is used where it lies; anything else is
 * streamed to `file` (never into memory). Returns the path to read.
 */
export async function fetchSource(source: IngestSource, storage: Storage, file: string, signal: AbortSignal): Promise<string> {
  if (source.kind === 'upload') {
    const local = storage.store.localPath(source.objectKey);
    if (local && (await storage.store.head(source.objectKey))) return local;
    const blob = await storage.store.get(source.objectKey);
    if (!blob) throw new JobFailure('The uploaded file no longer exists; upload it again');
    await pipeline(blob.stream, createWriteStream(file), { signal });
    return file;
  }
  // The timeout covers waiting for the response headers only; the body may take as long as it needs.
  const connect = new AbortController();
  const timer = setTimeout(() => connect.abort(new Error(`no response within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
  const response = await fetch(source.url, { signal: AbortSignal.any([signal, connect.signal]), redirect: 'follow' })
    .catch((error: unknown) => {
      if (signal.aborted) throw signal.reason;
      const reason = connect.signal.aborted ? (connect.signal.reason as Error) : error;
      throw new JobFailure(`Could not download ${source.url}: ${reason instanceof Error ? reason.message : String(reason)}`);
    })
    .finally(() => clearTimeout(timer));
  if (!response.ok || !response.body) throw new JobFailure(`Could not download ${source.url}: HTTP ${response.status}`);
  await pipeline(Readable.fromWeb(response.body as never), byteLimit(MAX_SOURCE_BYTES, 'The file at sourceUrl'), createWriteStream(file), { signal });
  return file;
}

/** The file name a URL names (for its kind), without the query string. */
export function filenameOfUrl(url: string): string {
  return decodeURIComponent(new URL(url).pathname.split('/').pop() ?? '');
}
