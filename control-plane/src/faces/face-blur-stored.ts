import type { EntityManager } from '@mikro-orm/postgresql';
import { buffer } from 'node:stream/consumers';
import { keepImageBytes, releaseImageBlobs } from '../images/image-blobs.ts';
import { decodeImage, type DecodedImage } from '../images/image-decode.ts';
import { imageKey } from '../images/image-urls.ts';
import { pointImageAtFile, type StoredImageRow } from '../images/image.store.ts';
import type { Storage } from '../storage/storage.ts';
import { isObjectRecorded } from '../storage/stored-object.store.ts';
import { withFacesBlurred } from './face-blur-image.ts';
import type { BlurOptions } from './face-blur.ts';
import type { FaceDetector } from './face-detector.ts';

/** Stored images larger than this are read whole for the blur no more: they are reported unchecked. */
const MAX_BLUR_BYTES = 64 * 2 ** 20;

export { STORED_IMAGE_COLUMNS, type StoredImageRow } from '../images/image.store.ts';

/**
 * A dataset's stored image with its faces blurred (new bytes, not stored yet), or as it is (faces 0); or why it
 * cannot be checked (undecodable, read in place, too large, its bytes gone).
 */
export async function blurStoredImage(
  storage: Storage,
  detector: FaceDetector,
  workspaceId: string,
  image: StoredImageRow,
  options?: BlurOptions,
): Promise<{ body: Buffer; file: DecodedImage; faces: number } | { skip: string }> {
  if (image.error) return { skip: `undecodable: ${image.error}` };
  if (image.reference_key) return { skip: 'read in place from connected storage, where it cannot be blurred' };
  if (Number(image.bytes) > MAX_BLUR_BYTES) return { skip: `larger than ${MAX_BLUR_BYTES} bytes` };
  const read = await storage.store.get(imageKey(workspaceId, image.hash, image.ext));
  if (!read) return { skip: 'its stored bytes are missing' };
  const body = await buffer(read.stream);
  const result = await withFacesBlurred(detector, body, await decodeImage(body, image.name), image.name, options);
  if ('skip' in result) return result;
  return { body: result.body as Buffer, file: result.file, faces: result.faces };
}

/**
 * Points the image's row at `file` (stored already, with its thumbnail: storeImageFiles) unless the row changed since
 * it was read (its hash), then deletes the old bytes when nothing else in the workspace uses them (another dataset's
 * copy, a saved version): the originals are not kept. `markChecked` records the image as checked by blurFaces.
 * `ifStored`: only when the file's bytes are still stored (prepared earlier, a sweep may have taken them). `first` runs
 * first in the transaction (a job's confirmHeld, so that a cancel wins over the change). Returns whether the row now
 * points at `file`.
 */
export async function replaceImageFile(
  em: EntityManager,
  storage: Storage,
  workspaceId: string,
  image: { id: string; hash: string; ext: string },
  file: { hash: string; ext: string; bytes: number; channels: number },
  options: { markChecked: boolean; ifStored?: boolean; first?: (tx: EntityManager) => Promise<void> },
): Promise<boolean> {
  const changed = await em.transactional(async (tx) => {
    await options.first?.(tx);
    // Under the bytes lock a release cannot delete the new bytes before the row points at them.
    await keepImageBytes(tx, workspaceId);
    if (options.ifStored) {
      if (!(await isObjectRecorded(tx, imageKey(workspaceId, file.hash, file.ext)))) return false;
    }
    return pointImageAtFile(tx, image, file, options.markChecked);
  });
  if (changed && file.hash !== image.hash) await releaseImageBlobs(em, storage, workspaceId, [image]);
  return changed;
}
