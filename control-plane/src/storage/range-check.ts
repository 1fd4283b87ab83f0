import { BlobRangeNotSatisfiable, type ByteRange } from './blob-store.ts';

/** Whether a range is well formed on its own: whole numbers, start ≤ end. */
export function isWellFormedRange(range: ByteRange): boolean {
  return (
    Number.isSafeInteger(range.start) && Number.isSafeInteger(range.end) && range.start >= 0 && range.start <= range.end
  );
}

/** The range actually served from an object of `size` bytes: an end past the last byte is clamped, as HTTP does. */
export function clampRange(range: ByteRange, size: number): ByteRange {
  if (!isWellFormedRange(range) || range.start >= size) throw new BlobRangeNotSatisfiable(size);
  return { start: range.start, end: Math.min(range.end, size - 1) };
}
