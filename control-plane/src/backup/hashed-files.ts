import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { PassThrough, Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { FILE_MODE } from './backup-format.ts';

/** A pass-through that SHA-256-hashes and counts what flows through it. */
export class Sha256Tap extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }

  /** Hex digest, once the stream has ended. */
  hex(): string {
    return this.hash.digest('hex');
  }
}

/** Copies `source` into a new file (never over an existing one), its owner's only; returns the bytes' size and SHA-256. */
export async function writeHashed(source: Readable, path: string): Promise<{ size: number; sha256: string }> {
  const tap = new Sha256Tap();
  await pipeline(source, tap, createWriteStream(path, { flags: 'wx', mode: FILE_MODE }));
  return { size: tap.bytes, sha256: tap.hex() };
}

/** SHA-256 and size of a file's bytes. */
export async function hashFile(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

/**
 * A new file (its owner's only) written line by line, gzipped if asked, waiting whenever the disk is behind; `close`
 * gives its file's SHA-256.
 */
export class LineFile {
  private readonly lines = new PassThrough();
  private readonly tap = new Sha256Tap();
  private readonly done: Promise<void>;

  constructor(path: string, options: { gzip: boolean }) {
    const file = createWriteStream(path, { flags: 'wx', mode: FILE_MODE });
    this.done = options.gzip
      ? pipeline(this.lines, createGzip(), this.tap, file)
      : pipeline(this.lines, this.tap, file);
    // Until close() awaits it, a write error must not go unhandled.
    this.done.catch(() => undefined);
  }

  async write(text: string): Promise<void> {
    if (!this.lines.write(text)) await Promise.race([once(this.lines, 'drain'), this.done]);
  }

  async close(): Promise<{ sha256: string }> {
    this.lines.end();
    await this.done;
    return { sha256: this.tap.hex() };
  }
}

/** The lines of a file written by LineFile. */
export function readLines(path: string, options: { gzip: boolean }): AsyncIterable<string> {
  const file = createReadStream(path);
  if (!options.gzip) return createInterface({ input: file, crlfDelay: Infinity });
  const gunzip = createGunzip();
  file.on('error', (error) => gunzip.destroy(error));
  return createInterface({ input: file.pipe(gunzip), crlfDelay: Infinity });
}
