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
export class InvalidImage extends Error {}

/** Decodes with sharp; throws InvalidImage for anything that is not a whole, bounded image. */
export async function decodeImage(bytes: Uint8Array, limits: DecodeLimits): Promise<DecodedImage> {
  void bytes;
  void limits;
  throw new Error('not built yet');
}
