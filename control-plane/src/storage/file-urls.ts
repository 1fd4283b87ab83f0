import type { BlobStore } from './blob-store.ts';
import type { SignedMethod, UrlSigner } from './signed-url.ts';

/** Where the control plane serves blobs itself: `/files/<key>` (disk store downloads). */
export const FILES_PREFIX = '/files/';

/** Object keys become URL paths segment by segment, so a key never changes the path's structure. */
export function keyToPath(prefix: string, key: string): string {
  return prefix + key.split('/').map(encodeURIComponent).join('/');
}

/** Signed URLs for downloads and uploads, whichever store holds the bytes. */
export class FileUrls {
  private readonly store: BlobStore;
  private readonly signer: UrlSigner;

  constructor(store: BlobStore, signer: UrlSigner) {
    this.store = store;
    this.signer = signer;
  }

  /** A presigned S3 URL, or a signed `/files/...` URL the control plane serves from disk. */
  async download(key: string, options: { expiresInSeconds: number; filename?: string }): Promise<string> {
    const direct = await this.store.directUrl(key, { method: 'GET', ...options });
    if (direct) return direct;
    const expiresAt = new Date(Date.now() + options.expiresInSeconds * 1000);
    return this.signer.sign('GET', keyToPath(FILES_PREFIX, key), expiresAt, options.filename);
  }

  /** A signed URL for one of the control plane's own routes (upload PUTs go through it on every store). */
  own(method: SignedMethod, path: string, expiresAt: Date): string {
    return this.signer.sign(method, path, expiresAt);
  }
}
