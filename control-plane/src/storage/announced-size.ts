import { HttpError } from '../http/errors.ts';

/** The largest checkpoint accepted from a trainer or a worker host. */
export const MAX_CHECKPOINT_BYTES = 4 * 2 ** 30;

/** The size a streamed PUT announces (Content-Length), required where nothing else fixed it: 411 without, 413 over the limit. */
export function announcedSize(
  contentLength: string | undefined,
  maxBytes = MAX_CHECKPOINT_BYTES,
  what = 'A checkpoint',
): number {
  const bytes = Number(contentLength);
  if (contentLength === undefined || !Number.isSafeInteger(bytes) || bytes < 0)
    throw new HttpError(411, 'Content-Length is required for this upload');
  if (bytes > maxBytes) throw new HttpError(413, `${what} may have at most ${maxBytes} bytes`);
  return bytes;
}
