import type { Readable } from 'node:stream';
import { HttpError } from '../http/errors.ts';
import { imageKey } from '../storage/blob-keys.ts';
import type { FileUrls } from '../storage/file-urls.ts';
import type { Storage } from '../storage/storage.ts';

/** What finds an image's bytes: in the blob store by workspace and hash, or (connected dataset) the object it was indexed from. */
export interface ImageBytesRef {
  id: string;
  workspaceId: string;
  hash: string;
  ext: string;
  /** Set for an image indexed in place: its key beneath its dataset's reference. */
  referenceKey?: string | null;
}

/** An image entity's ImageBytesRef, its fields named: spreading an entity copies its own properties only, none its class defines. */
export const bytesRefOf = (image: Omit<ImageBytesRef, 'workspaceId'>, workspaceId: string): ImageBytesRef => ({
  id: image.id,
  workspaceId,
  hash: image.hash,
  ext: image.ext,
  referenceKey: image.referenceKey,
});

/** Reads images indexed in place from their storage: declared with Storage, which holds one. */
export type { ReferencedBytes, ReferencedRead } from '../storage/storage.ts';

const CONTENT_TYPES: Record<string, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  tiff: 'image/tiff',
  avif: 'image/avif',
  heic: 'image/heic',
};
export const imageContentType = (ext: string) => CONTENT_TYPES[ext] ?? 'application/octet-stream';

/** Where the control plane serves an image indexed in place: `/reference-files/<workspace>/<image>`, signed. */
export const REFERENCE_FILES_PREFIX = '/reference-files/';
export const referenceFilePath = (workspaceId: string, imageId: string) =>
  `${REFERENCE_FILES_PREFIX}${workspaceId}/${imageId}`;

/**
 * A signed URL of an image's bytes: the blob store's (presigned, or the control plane's /files/), or for an image
 * indexed in place the control plane's route that streams it from its storage.
 */
export function imageFileUrl(
  urls: FileUrls,
  image: ImageBytesRef,
  options: { expiresInSeconds: number; filename?: string },
): Promise<string> {
  if (image.referenceKey)
    return Promise.resolve(
      urls.own(
        'GET',
        referenceFilePath(image.workspaceId, image.id),
        new Date(Date.now() + options.expiresInSeconds * 1000),
      ),
    );
  return urls.download(imageKey(image.workspaceId, image.hash, image.ext), options);
}

/**
 * An image's bytes, wherever they are; undefined when they cannot be had (missing from the blob store; an object
 * indexed in place that is gone, changed since, or whose storage does not answer): callers skip or refuse the image.
 */
export async function openImageBytes(
  storage: Storage,
  image: ImageBytesRef,
  signal?: AbortSignal,
): Promise<Readable | undefined> {
  if (!image.referenceKey) return (await storage.store.get(imageKey(image.workspaceId, image.hash, image.ext)))?.stream;
  if (!storage.references) return undefined;
  try {
    return (await storage.references.open(image, signal)).stream;
  } catch (error) {
    if (error instanceof HttpError) return undefined;
    throw error;
  }
}
