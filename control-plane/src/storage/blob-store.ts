import type { Readable } from 'node:stream';

/** Inclusive byte range, as in an HTTP `Range: bytes=start-end` header. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface PutOptions {
  contentType: string;
  /** Exact body length: a body longer or shorter is refused (BlobLengthMismatch) and nothing stays visible. */
  expectedBytes: number;
  /** Create-only: refuse (BlobExists) when the key already holds an object, atomically. */
  createOnly?: boolean;
  /**
   * The body's chunks are this put's alone (a request's body: nothing reads them afterwards): a store may free each
   * once written instead of leaving it to the next collection (see DiskBlobStore.put).
   */
  ownedChunks?: boolean;
}

export interface StoredBlob {
  size: number;
  /**
   * Hex MD5 of the bytes, computed while streaming by stores where reading back is dear (S3). The disk
   * store leaves it out: hashing would cost its uploads a third of their speed, and `md5Of` reads a
   * file back at disk speed when a client actually asks to compare.
   */
  md5?: string;
}

export interface BlobHead {
  size: number;
  contentType: string;
}

export interface BlobRead extends BlobHead {
  stream: Readable;
  /** The range served, when one was asked for. */
  range?: ByteRange;
}

export interface SignOptions {
  method: 'GET';
  expiresInSeconds: number;
  /** Suggested download filename (Content-Disposition: attachment). */
  filename?: string;
}

/**
 * Where every file of the appliance lives: local disk (the embedded default) or an S3-compatible service.
 * Writes stream and are all-or-nothing; reads stream with optional ranges.
 */
export interface BlobStore {
  readonly kind: 'disk' | 's3';
  /** The origin of the URLs directUrl hands out (browsers load images from it), or undefined when it hands out none. */
  readonly directOrigin: string | undefined;
  put(key: string, body: Readable, options: PutOptions): Promise<StoredBlob>;
  /** Undefined when the key holds nothing. A range past the end is BlobRangeNotSatisfiable. */
  get(key: string, range?: ByteRange): Promise<BlobRead | undefined>;
  head(key: string): Promise<BlobHead | undefined>;
  /** Idempotent: deleting a missing key is not an error. */
  delete(key: string): Promise<void>;
  list(prefix: string): AsyncIterable<{ key: string; size: number }>;
  /**
   * A URL the client fetches directly from the backend (S3 presigned), or undefined when the control
   * plane serves the bytes itself (disk) through its own signed /files URLs.
   */
  directUrl(key: string, options: SignOptions): Promise<string | undefined>;
  /**
   * The file that holds the object, where the store keeps objects as local files (disk): readers that
   * need a file (archive extraction) use it in place instead of copying it. Never written through.
   */
  localPath(key: string): string | undefined;
  /** Deletes what writes left behind when their process died mid-put (kill -9); returns how many files. */
  sweepInterrupted(): Promise<number>;
  close(): Promise<void>;
}

export class BlobExists extends Error {
  constructor(key: string) {
    super(`object already exists: ${key}`);
  }
}

export class BlobLengthMismatch extends Error {
  readonly expected: number;
  readonly received: number;
  constructor(expected: number, received: number) {
    super(`body has ${received > expected ? 'more' : 'fewer'} bytes than the declared ${expected}`);
    this.expected = expected;
    this.received = received;
  }
}

export class BlobRangeNotSatisfiable extends Error {
  readonly size: number;
  constructor(size: number) {
    super(`range not satisfiable for an object of ${size} bytes`);
    this.size = size;
  }
}
