import type { ReferencedBytes } from '../images/image-bytes.ts';
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
