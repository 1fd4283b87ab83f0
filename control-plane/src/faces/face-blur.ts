import sharp, { type Sharp } from 'sharp';
import { withDecodeMemory } from '../images/image-decode.ts';
import type { FaceBox } from './centerface.ts';
import type { FaceDetector } from './face-detector.ts';

/** Face boxes grow by this share of their size on every side, so hair, ears and chin go too. */
const MARGIN = 0.25;
/** Faces are blurred one by one up to here; a crowd of more is blurred as a whole picture. */
const MAX_FACES = 64;
/** The most pixels a blur decodes (4 bytes each, in the process's decoding budget): about 200 MB. */
export const MAX_BLUR_PIXELS = 50_000_000;
/** A face is shrunk to this many pixels across its long side, then enlarged back smoothly: nothing is left to recognise. */
const FACE_CELLS = 8;

/** An image with more pixels than a blur may decode. */
export class TooLargeToBlur extends Error {}

interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** How faces are found and how much around them goes. */
export interface BlurOptions {
  /** Detector score a face needs (centerface.ts FACE_THRESHOLD by default). */
  threshold?: number;
  /** The face box scaled around its centre before the margin (1: as detected). */
  boxScale?: number;
}

function enlarged(face: FaceBox, width: number, height: number, boxScale: number): Region {
  const cx = (face.x1 + face.x2) / 2;
  const cy = (face.y1 + face.y2) / 2;
  const halfWidth = (face.x2 - face.x1) * boxScale * (0.5 + MARGIN);
  const halfHeight = (face.y2 - face.y1) * boxScale * (0.5 + MARGIN);
  const left = Math.max(0, Math.floor(cx - halfWidth));
  const top = Math.max(0, Math.floor(cy - halfHeight));
  return {
    left,
    top,
    width: Math.max(1, Math.min(width, Math.ceil(cx + halfWidth)) - left),
    height: Math.max(1, Math.min(height, Math.ceil(cy + halfHeight)) - top),
  };
}

/** Encoded as the original was (HEIF as AVIF, the HEIF sharp writes); other formats as PNG. */
function encoded(image: Sharp, format: string | undefined): Promise<Buffer> {
  if (format === 'jpeg') return image.jpeg({ quality: 90 }).toBuffer();
  if (format === 'webp') return image.webp({ quality: 90 }).toBuffer();
  if (format === 'gif') return image.gif().toBuffer();
  if (format === 'tiff') return image.tiff().toBuffer();
  if (format === 'heif') return image.avif({ quality: 60 }).toBuffer();
  return image.png().toBuffer();
}

/**
 * The image with every face the detector finds replaced by a heavy blur, upright (EXIF orientation applied, metadata
 * dropped) and encoded in its format; null when there is no face (the bytes stay as they are). Throws TooLargeToBlur
 * over MAX_BLUR_PIXELS and sharp's error for an undecodable image.
 */
export async function blurFaces(
  detector: FaceDetector,
  input: Buffer | string,
  options: BlurOptions = {},
): Promise<{ bytes: Buffer; faces: number } | null> {
  const meta = await sharp(input).metadata();
  const pixels = meta.width * meta.height;
  if (pixels > MAX_BLUR_PIXELS)
    throw new TooLargeToBlur(
      `${meta.width}×${meta.height} px is more than the ${MAX_BLUR_PIXELS / 1e6} megapixels faces are blurred in`,
    );
  const { width, height, faces } = await detector.detect(input, options.threshold);
  if (faces.length === 0) return null;
  const bytes = await withDecodeMemory(pixels * 4 * 2, async () => {
    const { data, info } = await sharp(input, { failOn: 'error' })
      .rotate()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    const raw = { width: info.width, height: info.height, channels: info.channels };
    const regions =
      faces.length > MAX_FACES
        ? [{ left: 0, top: 0, width, height }]
        : faces.map((face) => enlarged(face, width, height, options.boxScale ?? 1));
    const patches = await Promise.all(
      regions.map(async (region) => {
        const k = FACE_CELLS / Math.max(region.width, region.height);
        // Two pipelines: sharp keeps only the last resize of one.
        const cells = await sharp(data, { raw })
          .extract(region)
          .resize(Math.max(1, Math.round(region.width * k)), Math.max(1, Math.round(region.height * k)), {
            fit: 'fill',
          })
          .raw()
          .toBuffer({ resolveWithObject: true });
        const patch = await sharp(cells.data, {
          raw: { width: cells.info.width, height: cells.info.height, channels: info.channels },
        })
          .resize(region.width, region.height, { fit: 'fill', kernel: 'cubic' })
          .raw()
          .toBuffer();
        return {
          input: patch,
          raw: { width: region.width, height: region.height, channels: info.channels },
          left: region.left,
          top: region.top,
        };
      }),
    );
    return encoded(sharp(data, { raw }).composite(patches), meta.format);
  });
  return { bytes, faces: faces.length };
}
