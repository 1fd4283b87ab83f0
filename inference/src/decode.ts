import sharp, { type Metadata } from 'sharp';

/** Pixels of one image as ultralytics reads them (EXIF orientation applied): RGB, 8 bits, height × width × 3. */
export interface DecodedImage {
  width: number;
  height: number;
  data: Uint8Array;
}

export interface DecodeLimits {
  /** Refuse images with more pixels than this before decoding them (the header is read first). */
  maxPixels: number;
}

/** The bytes are not an image this appliance can read (not an image, truncated, too many pixels); the message says which. */
export class InvalidImage extends Error {
  override name = 'InvalidImage';
}

/**
 * Decodes with sharp as cv2.imdecode(IMREAD_COLOR) reads for ultralytics: EXIF orientation applied, grey expanded to
 * three channels, alpha dropped (not blended), 16 bits cut to 8. Throws InvalidImage for anything that is not a whole,
 * bounded image; nothing else.
 */
export async function decodeImage(bytes: Uint8Array, limits: DecodeLimits): Promise<DecodedImage> {
  if (bytes.length === 0) throw new InvalidImage('the image is empty (0 bytes)');
  let header: Metadata;
  try {
    header = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (error) {
    throw new InvalidImage(`not an image this server can read: ${reason(error)}`);
  }
  const { width, height } = header;
  if (!width || !height) throw new InvalidImage('the image has no size');
  if (width * height > limits.maxPixels) {
    throw new InvalidImage(`the image has ${width} × ${height} pixels, more than the ${limits.maxPixels} allowed`);
  }
  try {
    // Each step only where the image needs it: they cost a pass over the pixels each.
    // ignoreIcc: cv2 reads the stored values; sharp would otherwise convert them through an embedded profile.
    let pipeline = sharp(bytes, {
      limitInputPixels: limits.maxPixels,
      failOn: 'truncated',
      sequentialRead: true,
      ignoreIcc: true,
    });
    if ((header.orientation ?? 1) > 1) pipeline = pipeline.autoOrient();
    if (header.hasAlpha) pipeline = pipeline.removeAlpha();
    if (header.space !== 'srgb' || header.channels - (header.hasAlpha ? 1 : 0) !== 3 || header.depth !== 'uchar')
      pipeline = pipeline.toColourspace('srgb');
    const { data, info } = await pipeline.raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new InvalidImage(`the image decodes to ${info.channels} channels, not 3`);
    return {
      width: info.width,
      height: info.height,
      data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    };
  } catch (error) {
    if (error instanceof InvalidImage) throw error;
    throw new InvalidImage(`the image could not be decoded: ${reason(error)}`);
  }
}

function reason(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (
    message
      .split('\n')[0]
      .replace(/^Input buffer (contains|has) /, '')
      .trim() || 'unknown format'
  );
}
