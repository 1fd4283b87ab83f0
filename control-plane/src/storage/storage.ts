import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.ts';
import type { FileUrls } from './file-urls.ts';
import type { UrlSigner } from './signed-url.ts';

/** The blob store and the URLs that reach it, shared by every request of a process. */
export interface Storage {
  store: BlobStore;
  signer: UrlSigner;
  urls: FileUrls;
  /** Images indexed in place, read from their storage; absent where none are read (vpctl). */
  references?: ReferencedBytes;
}

/** Reads images indexed in place from their storage (ingest/reference/referenced-bytes.ts). */
export interface ReferencedBytes {
  /** The object's bytes; an HttpError (404 gone, 409 changed since indexed or storage disconnected, 502 storage failing) when they cannot be had. */
  open(image: { id: string; workspaceId: string }, signal?: AbortSignal): Promise<ReferencedRead>;
}

export interface ReferencedRead {
  stream: Readable;
  bytes: number;
  ext: string;
  name: string;
}
