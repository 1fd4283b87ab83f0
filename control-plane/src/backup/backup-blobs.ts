// The blob part of a backup: the stored objects the snapshot knows, copied with their SHA-256 from a local-disk
// store; listed only, for an S3 bucket (backed up by its own means).
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type pg from 'pg';
import type { BlobStore } from '../storage/blob-store.ts';
import { snapshotKeysSql } from '../storage/blob-keys.ts';
import { BLOB_MANIFEST_FILE, BLOBS_DIR, blobPath, FOLDER_MODE, mib, type BlobEntry } from './backup-format.ts';
import { LineFile, writeHashed } from './hashed-files.ts';
import { throttled, type Progress } from './progress.ts';

const FETCH_KEYS = 1000;

/**
 * Every key the snapshot knows: each recorded object (stored_objects, written before its bytes by image intake,
 * after them by every other writer) and each key a row uses. A key a row uses was written completely before that
 * row committed (uploads, outputs and checkpoints store, then record; images store, then insert their rows), so
 * its bytes must be there; a key only recorded may belong to a write still in progress at the snapshot. The key
 * columns are those of storage/blob-keys.ts, which the orphan sweep and erase use too. An image indexed in place
 * (reference_key) is read from the customer's storage and never stored here: only its thumbnail is, and its row is
 * in the dump.
 */
const SNAPSHOT_KEYS_SQL = snapshotKeysSql();

export interface BlobsCopied {
  entries: number;
  bytes: number;
  /** blobs.jsonl's SHA-256. */
  sha256: string;
  missing: string[];
  notWritten: number;
}

/**
 * Writes blobs.jsonl (and, from a disk store, the objects under blobs/) for the snapshot `client` is in. Objects
 * deleted since the snapshot that a row uses are `missing`; those only recorded and absent are `notWritten`.
 */
export async function backUpBlobs(
  client: pg.Client,
  store: BlobStore,
  dir: string,
  progress: Progress,
): Promise<BlobsCopied> {
  const copy = store.kind === 'disk';
  if (copy) await mkdir(join(dir, BLOBS_DIR), { mode: FOLDER_MODE });
  const manifest = new LineFile(join(dir, BLOB_MANIFEST_FILE), { gzip: false });
  const report = throttled(progress);
  const result = { entries: 0, bytes: 0, missing: [] as string[], notWritten: 0 };
  await client.query(`declare blob_keys no scroll cursor for ${SNAPSHOT_KEYS_SQL}`);
  for (;;) {
    const batch = await client.query<{ key: string; bytes: string; used: string }>(
      `fetch ${FETCH_KEYS} from blob_keys`,
    );
    if (batch.rows.length === 0) break;
    for (const row of batch.rows) {
      const entry = copy ? await copyBlob(store, dir, row.key) : { key: row.key, size: Number(row.bytes) };
      if (!entry) {
        if (row.used === 't') result.missing.push(row.key);
        else result.notWritten++;
        continue;
      }
      await manifest.write(`${JSON.stringify(entry)}\n`);
      result.entries++;
      result.bytes += entry.size;
    }
    report.report(
      `blobs: ${result.entries.toLocaleString('en-US')} ${copy ? `copied, ${mib(result.bytes)}` : 'listed'}`,
    );
  }
  await client.query('close blob_keys');
  report.last(`blobs: ${result.entries.toLocaleString('en-US')} ${copy ? `copied, ${mib(result.bytes)}` : 'listed'}`);
  return { ...result, sha256: (await manifest.close()).sha256 };
}

/** Undefined when the key holds nothing now. */
async function copyBlob(store: BlobStore, dir: string, key: string): Promise<BlobEntry | undefined> {
  const read = await store.get(key);
  if (!read) return undefined;
  const path = blobPath(dir, key);
  await mkdir(dirname(path), { recursive: true, mode: FOLDER_MODE });
  const { size, sha256 } = await writeHashed(read.stream, path);
  return { key, size, sha256, contentType: read.contentType };
}
