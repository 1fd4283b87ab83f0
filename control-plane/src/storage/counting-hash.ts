import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { BlobLengthMismatch, type StoredBlob } from './blob-store.ts';

/**
 * A pass-through that counts (and, if asked, MD5-hashes) the bytes in the same pass as the write. A body longer
 * than `expectedBytes` fails as soon as it grows past it (no point storing the rest), a shorter one
 * instead of ending: either way the consumer sees an error before it could commit anything.
 */
export class CountingHash extends Transform {
  private readonly expectedBytes: number;
  private readonly md5: Hash | undefined;
  private bytes = 0;

  constructor(expectedBytes: number, options: { md5: boolean }) {
    super();
    this.expectedBytes = expectedBytes;
    this.md5 = options.md5 ? createHash('md5') : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.expectedBytes) return callback(new BlobLengthMismatch(this.expectedBytes, this.bytes));
    this.md5?.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    callback(this.bytes === this.expectedBytes ? null : new BlobLengthMismatch(this.expectedBytes, this.bytes));
  }

  /** The size and MD5, once the body has ended. */
  result(): StoredBlob {
    return this.md5 ? { size: this.bytes, md5: this.md5.digest('hex') } : { size: this.bytes };
  }
}
