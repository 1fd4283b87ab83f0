import { isKnownImageFormat } from '../images/image-decode.ts';
import { fetchBytes, OutboundError, type OutboundPolicy } from '../net/guarded-fetch.ts';

/**
 * The image an NDJSON item names by URL, or why the item is skipped. Only images are kept: any other
 * body (an internal page, an error text) would otherwise be stored and served back through its image URL.
 */
export async function fetchImage(url: string, options: { policy: OutboundPolicy; signal: AbortSignal; maxBytes: number }): Promise<Buffer | string> {
  let bytes: Buffer;
  try {
    bytes = await fetchBytes(url, options);
  } catch (error) {
    options.signal.throwIfAborted();
    if (!(error instanceof OutboundError)) throw error;
    return error.kind === 'too-large' ? error.message : `download ${error.kind}: ${error.message}`;
  }
  return (await isKnownImageFormat(bytes)) ? bytes : 'not an image';
}
