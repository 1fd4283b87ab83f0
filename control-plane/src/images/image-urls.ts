import type { FileUrls } from '../storage/file-urls.ts';
import { thumbnailKey } from '../storage/blob-keys.ts';
import { imageFileUrl } from './image-bytes.ts';

/** Image bytes are stored once per workspace and content hash, so copies share them (built in storage/blob-keys.ts). */
export { imageKey, thumbnailKey } from '../storage/blob-keys.ts';

const URL_HOURS = 1;

export interface StoredImageRef {
  workspaceId: string;
  hash: string;
  ext: string;
  name: string;
  /** Images that could not be decoded have no thumbnail. */
  error: string | null;
  /** For an image indexed in place (its key beneath the dataset's reference), served by the control plane by its id. */
  referenceKey?: string | null;
  id?: string;
}

/**
 * Signed image and thumbnail URLs. Expiry is rounded up to the next whole hour, so the same image gets
 * the same URL for a while and browsers can cache thumbnails across list pages.
 */
export class ImageUrls {
  private readonly urls: FileUrls;

  constructor(urls: FileUrls) {
    this.urls = urls;
  }

  private expiresInSeconds(): number {
    const now = Date.now();
    const hour = 3600_000;
    return Math.ceil((Math.ceil(now / hour) * hour + URL_HOURS * hour - now) / 1000);
  }

  image(ref: StoredImageRef): Promise<string> {
    return imageFileUrl(
      this.urls,
      { ...ref, id: ref.id ?? '', referenceKey: ref.referenceKey ?? null },
      { expiresInSeconds: this.expiresInSeconds(), filename: ref.name },
    );
  }

  async thumbnail(ref: StoredImageRef): Promise<string | null> {
    if (ref.error) return null;
    return this.urls.download(thumbnailKey(ref.workspaceId, ref.hash), { expiresInSeconds: this.expiresInSeconds() });
  }
}
