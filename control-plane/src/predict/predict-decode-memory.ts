// What a predict's image will take to decode, checked before the model is looked up or the image decoded.
import { PayloadTooLarge } from '../http/errors.ts';
import { decodeEstimateOf, WHOLE_DECODE_MAX_BYTES } from '../images/image-decode.ts';

const MiB = 2 ** 20;

/**
 * The memory decoding the image takes (its pixels whole at full size, kept while the model runs), from its header:
 * the share of the process's decoding memory the run holds. 413 over WHOLE_DECODE_MAX_BYTES (a 146 KB PNG may claim
 * 50 megapixels, 150 MB decoded). Bytes whose header cannot be read take none: the decode refuses them (400).
 */
export async function predictDecodeMemory(image: Uint8Array): Promise<number> {
  const estimate = await decodeEstimateOf(image);
  if (!estimate) return 0;
  if (estimate.whole > WHOLE_DECODE_MAX_BYTES) {
    throw PayloadTooLarge(
      `The image (${estimate.pixels}) would take about ${Math.ceil(estimate.whole / MiB)} MiB to decode, more than the ${WHOLE_DECODE_MAX_BYTES / MiB} MiB one predict may use: send it scaled down (the model sees it at imgsz anyway)`,
    );
  }
  return estimate.whole;
}
