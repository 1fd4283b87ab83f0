import { decodeImage, type DecodedImage, type ImageFile } from '../images/image-decode.ts';
import { blurFaces, TooLargeToBlur } from './face-blur.ts';
import type { FaceDetector } from './face-detector.ts';

/**
 * An image of a dataset with blurFaces as it is to be stored: its faces blurred (new bytes, so a new hash and
 * thumbnail), or as it was when it has none; or why it cannot be kept there (undecodable or too large to check).
 */
export async function withFacesBlurred(detector: FaceDetector, body: ImageFile, file: DecodedImage, filename: string): Promise<{ body: ImageFile; file: DecodedImage } | { skip: string }> {
  if (file.error) return { skip: `faces could not be checked: ${file.error}` };
  try {
    const blurred = await blurFaces(detector, Buffer.isBuffer(body) ? body : body.path);
    return blurred ? { body: blurred.bytes, file: await decodeImage(blurred.bytes, filename) } : { body, file };
  } catch (error) {
    if (error instanceof TooLargeToBlur) return { skip: `faces could not be checked: ${error.message}` };
    throw error;
  }
}
