import { createHash } from 'node:crypto';
import sharp from 'sharp';

export const THUMBNAIL_PX = 256;

// Every image is decoded once: sharp's operation cache would only hold memory (tens of MB per process).
sharp.cache(false);
// Callers decode several images at once (one per core and more); one libvips thread each keeps the
// threads, and the malloc arenas that come with them, from multiplying.
sharp.concurrency(1);

export interface DecodedImage {
  hash: string;
  ext: string;
  width: number;
  height: number;
  channels: number;
  bytes: number;
  /** WebP thumbnail, upright; null when the image could not be decoded. */
  thumbnail: Buffer | null;
  /** Why the image could not be decoded, shown as the image's error. */
  error: string | null;
}

const EXT_OF_FORMAT: Record<string, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', gif: 'gif', tiff: 'tiff', avif: 'avif', heif: 'heic' };

/** The file's extension, lower-cased, or `bin`: used where the bytes say nothing (undecodable files). */
function extOfName(filename: string): string {
  const match = /\.([a-z0-9]{1,15})$/i.exec(filename);
  return match ? match[1].toLowerCase() : 'bin';
}

/** sharp's message for a failed decode (libvips wording, or "Unknown error"), in words the uploader can act on. */
const UNREADABLE: Array<[RegExp, string]> = [
  [/unsupported image format/i, 'the file is not an image in a supported format (such as JPEG, PNG or WebP)'],
  [/buffer is empty/i, 'the file is empty'],
  [/pixel limit/i, 'the image has too many pixels (more than 268 million)'],
];

function unreadableReason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const known = UNREADABLE.find(([pattern]) => pattern.test(message));
  return known ? known[1] : 'the image data is damaged or incomplete (for example cut off while copying)';
}

/**
 * Hash, dimensions and thumbnail of one image. Dimensions are as displayed: EXIF orientations 5-8 turn
 * the picture a quarter, so width and height swap. A file sharp cannot fully decode (corrupt, truncated,
 * not an image) still becomes an image record, with its error set.
 */
export async function decodeImage(bytes: Buffer, filename: string): Promise<DecodedImage> {
  const hash = createHash('sha256').update(bytes).digest('hex');
  try {
    const meta = await sharp(bytes).metadata();
    const quarterTurn = (meta.orientation ?? 1) >= 5;
    const thumbnail = await sharp(bytes, { failOn: 'error' })
      .rotate()
      .resize({ width: THUMBNAIL_PX, height: THUMBNAIL_PX, fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 75 })
      .toBuffer();
    return {
      hash,
      ext: EXT_OF_FORMAT[meta.format] ?? extOfName(filename),
      width: (quarterTurn ? meta.height : meta.width) ?? 0,
      height: (quarterTurn ? meta.width : meta.height) ?? 0,
      channels: meta.channels ?? 0,
      bytes: bytes.length,
      thumbnail,
      error: null,
    };
  } catch (error) {
    return { hash, ext: extOfName(filename), width: 0, height: 0, channels: 0, bytes: bytes.length, thumbnail: null, error: `Could not decode image: ${unreadableReason(error)}` };
  }
}
