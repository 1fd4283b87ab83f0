import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isKnownImageFormat, type ImageFile } from '../images/image-decode.ts';
import { guardedFetch, OutboundError, type OutboundPolicy } from '../net/guarded-fetch.ts';

interface FetchImageOptions {
  policy: OutboundPolicy;
  signal: AbortSignal;
  maxBytes: number;
  /** A body larger than this goes to `spillFile` instead of memory. */
  inMemoryBytes: number;
  spillFile: string;
}

/**
 * The image an NDJSON item names by URL, or why the item is skipped. Only images are kept: any other
 * body (an internal page, an error text) would otherwise be stored and served back through its image URL.
 */
export async function fetchImage(url: string, options: FetchImageOptions): Promise<ImageFile | string> {
  let file: ImageFile;
  try {
    const { body } = await guardedFetch(url, options);
    file = await download(body, options);
  } catch (error) {
    options.signal.throwIfAborted();
    if (!(error instanceof OutboundError)) throw error;
    return error.kind === 'too-large' ? error.message : `download ${error.kind}: ${error.message}`;
  }
  return (await isKnownImageFormat(file)) ? file : 'not an image';
}

/** The body in memory up to `inMemoryBytes`; past that, all of it streamed to `spillFile`. */
async function download(body: Readable, { inMemoryBytes, spillFile, signal }: FetchImageOptions): Promise<ImageFile> {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const head: Buffer[] = [];
  let held = 0;
  while (held <= inMemoryBytes) {
    const next = await chunks.next();
    if (next.done) return Buffer.concat(head);
    head.push(next.value);
    held += next.value.length;
  }
  async function* everything(): AsyncGenerator<Buffer> {
    yield* head.splice(0);
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  await pipeline(everything, createWriteStream(spillFile), { signal });
  return { path: spillFile, bytes: (await stat(spillFile)).size };
}
