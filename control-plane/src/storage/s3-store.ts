import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Readable } from 'node:stream';
import { attachment } from '../http/byte-range.ts';
import {
  BlobExists,
  BlobRangeNotSatisfiable,
  type BlobHead,
  type BlobRead,
  type BlobStore,
  type ByteRange,
  type PutOptions,
  type SignOptions,
  type StoredBlob,
} from './blob-store.ts';
import { CountingHash } from './counting-hash.ts';
import { isWellFormedRange } from './range-check.ts';

export interface S3StoreOptions {
  bucket: string;
  endpoint: string;
  region: string;
  /** Absent: the SDK's standard chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ...). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** Multipart parts held in memory at once: partBytes × (QUEUE_SIZE + 1) bounds a put's memory. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
const QUEUE_SIZE = 1;
/** S3 allows 10,000 parts; a margin below that keeps the smallest part size that fits the object. */
const MAX_PARTS = 9000;

/** S3's smallest part (5 MiB) unless the object needs larger ones to stay within the part count. */
export function partBytesFor(totalBytes: number): number {
  return Math.max(MIN_PART_BYTES, Math.ceil(totalBytes / MAX_PARTS));
}

function statusOf(error: unknown): number | undefined {
  return error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
}

/** An S3-compatible service (AWS, MinIO, SeaweedFS, Ceph...): one bucket, path-style addressing. */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3';
  readonly directOrigin: string;
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(options: S3StoreOptions) {
    this.bucket = options.bucket;
    this.directOrigin = new URL(options.endpoint).origin;
    this.client = new S3Client({
      endpoint: options.endpoint,
      region: options.region,
      forcePathStyle: true,
      credentials: options.credentials,
      // Flexible checksums break presigned URLs and many S3-compatible servers; MD5 is ours to compute.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  /** Fails unless the bucket exists and these credentials reach it. */
  async checkAccess(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  async put(key: string, body: Readable, options: PutOptions): Promise<StoredBlob> {
    // Refuses before streaming a large body for nothing; the conditional write below is what makes it atomic.
    if (options.createOnly && (await this.head(key))) throw new BlobExists(key);
    const counter = new CountingHash(options.expectedBytes, { md5: true });
    // The upload reads the counter: a broken body must break it too.
    body.on('error', (error) => counter.destroy(error));
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: body.pipe(counter),
        ContentType: options.contentType,
        IfNoneMatch: options.createOnly ? '*' : undefined,
      },
      partSize: partBytesFor(options.expectedBytes),
      queueSize: QUEUE_SIZE,
      // A failed upload (a bad length, a broken body) is aborted, so nothing of it becomes visible.
      leavePartsOnError: false,
    });
    try {
      await upload.done();
    } catch (error) {
      if (statusOf(error) === 412) throw new BlobExists(key);
      throw error;
    }
    return counter.result();
  }

  async get(key: string, range?: ByteRange): Promise<BlobRead | undefined> {
    if (range && !isWellFormedRange(range)) throw new BlobRangeNotSatisfiable((await this.head(key))?.size ?? 0);
    try {
      const response = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      const stream = response.Body as Readable;
      const contentType = response.ContentType ?? 'application/octet-stream';
      if (!range) return { size: response.ContentLength ?? 0, contentType, stream };
      // Content-Range: bytes start-end/size
      const [, start, end, size] = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(response.ContentRange ?? '') ?? [];
      return { size: Number(size), contentType, stream, range: { start: Number(start), end: Number(end) } };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      if (statusOf(error) === 416) throw new BlobRangeNotSatisfiable((await this.head(key))?.size ?? 0);
      throw error;
    }
  }

  async head(key: string): Promise<BlobHead | undefined> {
    try {
      const response = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: response.ContentLength ?? 0, contentType: response.ContentType ?? 'application/octet-stream' };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async *list(prefix: string): AsyncIterable<{ key: string; size: number }> {
    let ContinuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken }),
      );
      for (const object of page.Contents ?? []) yield { key: object.Key ?? '', size: object.Size ?? 0 };
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  localPath(): undefined {
    return undefined;
  }

  async directUrl(key: string, options: SignOptions): Promise<string> {
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentDisposition: options.filename === undefined ? undefined : attachment(options.filename),
    });
    return getSignedUrl(this.client, command, { expiresIn: options.expiresInSeconds });
  }

  /** A put cut off mid-way shows no object; the parts of its multipart upload are the bucket's lifecycle rule's to abort. */
  async sweepInterrupted(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
