import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import sharp, { type Metadata } from 'sharp';
import { ByteBudget } from './byte-budget.ts';

export const THUMBNAIL_PX = 256;
/**
 * WebP at the lowest effort: encoding took 60% of a 640×480 JPEG's thumbnail at libwebp's default effort (4), and
 * 30% at effort 0, for files no larger at this size (measured on generated photos: 9.9 KB against 10.3 KB).
 */
export const THUMBNAIL_WEBP = { quality: 75, effort: 0 };

// Every image is decoded once: sharp's operation cache would only hold memory (tens of MB per process).
sharp.cache(false);
// Callers decode several images at once (one per core and more); one libvips thread each keeps the
// threads, and the malloc arenas that come with them, from multiplying.
sharp.concurrency(1);

/**
 * The memory this process lets image decoding take at once, and the most one image may need. Decoding can
 * take far more than the file's size (a 1 KB AVIF of 8000×8000 px takes 1.1 GB, a 50 KB PNG of
 * 4,000,000×1 px 460 MB, both under libvips' pixel limit): every decode first waits for its estimate
 * (`decodeMemoryOf`) to be free, and an image whose estimate is over the whole is not decoded.
 */
const MiB = 2 ** 20;
export const DECODE_MEMORY_BYTES = 256 * MiB;
const decoding = new ByteBudget(DECODE_MEMORY_BYTES);

/** Runs a decode of `bytes` of pixels (or more) within the process's decoding budget (at most all of it). */
export const withDecodeMemory = <T>(bytes: number, task: () => Promise<T>): Promise<T> => decoding.with(bytes, task);

/** An image file: its bytes, or a local file (one too large to hold in memory) and its size. */
export type ImageFile = Buffer | { path: string; bytes: number };

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

const EXT_OF_FORMAT: Record<string, string> = {
  jpeg: 'jpg',
  png: 'png',
  webp: 'webp',
  gif: 'gif',
  tiff: 'tiff',
  avif: 'avif',
  heif: 'heic',
};

/** Whether the file is an image of a format kept here, by its header (a bad file of such a format counts). */
export async function isKnownImageFormat(file: ImageFile): Promise<boolean> {
  try {
    return Object.hasOwn(EXT_OF_FORMAT, (await sharp(Buffer.isBuffer(file) ? file : file.path).metadata()).format);
  } catch {
    return false;
  }
}

const SAMPLE_BYTES: Record<string, number> = {
  uchar: 1,
  char: 1,
  ushort: 2,
  short: 2,
  uint: 4,
  int: 4,
  float: 4,
  complex: 8,
  double: 8,
  dpcomplex: 16,
};

/** Rows libvips holds while it shrinks an image that it reads from top to bottom (measured: up to about 1,700). */
const STREAMED_ROWS = 2048;

/**
 * What decoding an image into its thumbnail takes, from its header: measured with sharp 0.35 on the worst
 * cases (wide, tall, 16-bit, tiny compressed files), rounded up. Baseline JPEG, non-interlaced PNG and WebP
 * are read a band of rows at a time (unless `whole`: turned upright, which needs every row); the other
 * formats (progressive JPEG, interlaced PNG, GIF, TIFF, SVG) whole, and AVIF/HEIF several times over.
 */
function decodeMemoryOf(
  meta: Pick<Metadata, 'format' | 'width' | 'height' | 'channels' | 'depth' | 'isProgressive'>,
  whole = false,
): number {
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const pixelBytes = Math.max(meta.channels ?? 4, 4) * (SAMPLE_BYTES[meta.depth ?? ''] ?? 8);
  const streamed = !whole && ['jpeg', 'png', 'webp'].includes(meta.format) && !meta.isProgressive;
  if (streamed) return width * pixelBytes * Math.min(4 * height + 16, STREAMED_ROWS);
  return width * height * pixelBytes * (meta.format === 'heif' ? 5 : 2);
}

/**
 * The most one decode of a whole image at full size (a predict's input) may take: half the process's decoding
 * memory, so that such decodes run a few at once and one image never holds all of it. A 24-megapixel JPEG or PNG
 * (6000×4000) takes about 115 MiB.
 */
export const WHOLE_DECODE_MAX_BYTES = DECODE_MEMORY_BYTES / 2;

/** What decoding an image takes, estimated from its header alone. */
export interface DecodeEstimate {
  /** Shrunk as it is read: a thumbnail, an embedder's input. */
  shrunk: number;
  /** Whole at full size to 8-bit RGB, its pixels kept: a predict's input (as its inference worker keeps them while the model runs). */
  whole: number;
  /** The image, for a refusal: `7071×7071 px png`. */
  pixels: string;
}

/** The decode estimates of `bytes`; null when sharp cannot read the header (the decode itself then says why). */
export async function decodeEstimateOf(bytes: Uint8Array): Promise<DecodeEstimate | null> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    return null;
  }
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  return {
    shrunk: decodeMemoryOf(meta),
    whole: width * height * 3 + decodeMemoryOf(meta, (meta.orientation ?? 1) > 1),
    pixels: `${width}×${height} px ${meta.format}`,
  };
}

/** The file's extension, lower-cased, or `bin`: used where the bytes say nothing (undecodable files). */
function extOfName(filename: string): string {
  const match = /\.([a-z0-9]{1,15})$/i.exec(filename);
  return match ? match[1].toLowerCase() : 'bin';
}

export const sizeOf = (file: ImageFile): number => (Buffer.isBuffer(file) ? file.length : file.bytes);

async function sha256Of(file: ImageFile): Promise<string> {
  const hash = createHash('sha256');
  if (Buffer.isBuffer(file)) hash.update(file);
  else for await (const chunk of createReadStream(file.path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** An image whose decoding would take more memory than this process allows: refused from its header. */
class TooLargeToDecode extends Error {}

/** sharp's message for a failed decode (libvips wording, or "Unknown error"), in words the uploader can act on. */
const UNREADABLE: Array<[RegExp, string]> = [
  [/unsupported image format/i, 'the file is not an image in a supported format (such as JPEG, PNG or WebP)'],
  [/buffer is empty/i, 'the file is empty'],
  [/pixel limit/i, 'the image has too many pixels (more than 268 million)'],
];

function unreadableReason(error: unknown): string {
  if (error instanceof TooLargeToDecode) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  const known = UNREADABLE.find(([pattern]) => pattern.test(message));
  return known ? known[1] : 'the image data is damaged or incomplete (for example cut off while copying)';
}

/**
 * Hash, dimensions and thumbnail of one image. Dimensions are as displayed: EXIF orientations 5-8 turn
 * the picture a quarter, so width and height swap. A file sharp cannot fully decode (corrupt, truncated,
 * not an image, too large to decode) still becomes an image record, with its error set.
 */
export async function decodeImage(file: ImageFile, filename: string): Promise<DecodedImage> {
  const hash = await sha256Of(file);
  const bytes = sizeOf(file);
  const input = Buffer.isBuffer(file) ? file : file.path;
  try {
    const meta = await sharp(input).metadata();
    const memory = decodeMemoryOf(meta);
    if (memory > DECODE_MEMORY_BYTES) {
      throw new TooLargeToDecode(
        `${meta.width}×${meta.height} px ${meta.format} would take about ${Math.ceil(memory / MiB)} MiB to decode, more than ${DECODE_MEMORY_BYTES / MiB} MiB`,
      );
    }
    const quarterTurn = (meta.orientation ?? 1) >= 5;
    const thumbnail = await decoding.with(memory, () =>
      sharp(input, { failOn: 'error' })
        .rotate()
        .resize({ width: THUMBNAIL_PX, height: THUMBNAIL_PX, fit: 'inside', withoutEnlargement: true })
        .webp(THUMBNAIL_WEBP)
        .toBuffer(),
    );
    return {
      hash,
      ext: EXT_OF_FORMAT[meta.format] ?? extOfName(filename),
      width: (quarterTurn ? meta.height : meta.width) ?? 0,
      height: (quarterTurn ? meta.width : meta.height) ?? 0,
      channels: meta.channels ?? 0,
      bytes,
      thumbnail,
      error: null,
    };
  } catch (error) {
    return {
      hash,
      ext: extOfName(filename),
      width: 0,
      height: 0,
      channels: 0,
      bytes,
      thumbnail: null,
      error: `Could not decode image: ${unreadableReason(error)}`,
    };
  }
}
