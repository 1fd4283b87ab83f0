import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BlobStore } from './blob-store.ts';
import { DiskBlobStore } from './disk-store.ts';
import type { S3StoreOptions } from './s3-store.ts';

/**
 * The blob store STORAGE_URL names: unset → `<dataDir>/blobs`; `file:///abs/path` → that folder;
 * `s3://bucket?endpoint=...&region=...[&accessKeyId=...&secretAccessKey=...]` → an existing bucket,
 * whose access is checked here so a wrong setting stops start-up rather than the first upload.
 */
export async function openBlobStore(storageUrl: string | undefined, dataDir: string): Promise<BlobStore> {
  if (storageUrl === undefined) return new DiskBlobStore(join(dataDir, 'blobs'));
  const url = new URL(storageUrl);
  if (url.protocol === 'file:') return new DiskBlobStore(fileURLToPath(url));
  if (url.protocol !== 's3:') throw new Error(`STORAGE_URL must be a file:// or s3:// URL, not ${url.protocol}//`);
  const options = s3Options(url);
  // Loaded only when used: the AWS SDK adds tens of MB to every process that imports it.
  const { S3BlobStore } = await import('./s3-store.ts');
  const store = new S3BlobStore(options);
  try {
    await store.checkAccess();
  } catch (error) {
    await store.close();
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    throw new Error(`STORAGE_URL: cannot reach bucket "${options.bucket}" at ${options.endpoint} (${reason})`, {
      cause: error,
    });
  }
  return store;
}

function s3Options(url: URL): S3StoreOptions {
  const query = url.searchParams;
  const endpoint = query.get('endpoint');
  if (!url.hostname || !endpoint)
    throw new Error(
      'STORAGE_URL: an s3:// URL needs a bucket and an endpoint, as s3://bucket?endpoint=http://host:9000',
    );
  const accessKeyId = query.get('accessKeyId');
  const secretAccessKey = query.get('secretAccessKey');
  if ((accessKeyId === null) !== (secretAccessKey === null))
    throw new Error('STORAGE_URL: give both accessKeyId and secretAccessKey, or neither');
  return {
    bucket: url.hostname,
    endpoint,
    region: query.get('region') ?? 'us-east-1',
    credentials: accessKeyId !== null && secretAccessKey !== null ? { accessKeyId, secretAccessKey } : undefined,
  };
}
