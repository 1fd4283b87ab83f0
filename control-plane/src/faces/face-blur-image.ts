import { decodeImage, type DecodedImage, type ImageFile } from '../images/image-decode.ts';
import { blurFaces, TooLargeToBlur, type BlurOptions } from './face-blur.ts';
import type { FaceDetector } from './face-detector.ts';

/**
 * An image of a dataset with blurFaces as it is to be stored: its faces blurred (new bytes, so a new hash and
 * thumbnail), or as it was when it has none (faces 0); or why it cannot be kept there (undecodable or too large to check).
 */
export async function withFacesBlurred(
  detector: FaceDetector,
  body: ImageFile,
  file: DecodedImage,
  filename: string,
  options?: BlurOptions,
): Promise<{ body: ImageFile; file: DecodedImage; faces: number } | { skip: string }> {
  if (file.error) return { skip: `faces could not be checked: ${file.error}` };
  try {
    const blurred = await blurFaces(detector, Buffer.isBuffer(body) ? body : body.path, options);
    return blurred
      ? { body: blurred.bytes, file: await decodeImage(blurred.bytes, filename), faces: blurred.faces }
      : { body, file, faces: 0 };
  } catch (error) {
    if (error instanceof TooLargeToBlur) return { skip: `faces could not be checked: ${error.message}` };
    throw error;
  }
}
