// What `vpctl backup` writes into its folder, and how `vpctl restore` reads it back:
//   backup.json            this manifest (written last: a folder without it is an unfinished backup)
//   backup.mac             backup.json's HMAC under the operator's backup key (backup-key.ts)
//   database/<table>.jsonl.gz   each table's rows, one JSON array of PostgreSQL text values per line
//   blobs.jsonl            one line per stored object the dump knows: key, size, sha256, content type
//   blobs/<key>            the objects' bytes, when the store is local disk
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { Invalid } from '../http/errors.ts';

export const BACKUP_FORMAT = 'vp-appliance-backup';
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_FILE = 'backup.json';
export const BLOB_MANIFEST_FILE = 'blobs.jsonl';
export const TABLES_DIR = 'database';
export const BLOBS_DIR = 'blobs';
/**
 * A backup holds key hashes, sealed credentials and every file: its folders are 0700 and its files 0600, whatever the
 * umask (which can only take permissions away from these).
 */
export const FOLDER_MODE = 0o700;
export const FILE_MODE = 0o600;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
/** A stored object's key: a relative `/` path that cannot leave the folder it is joined to. */
const BlobKey = z
  .string()
  .min(1)
  .max(1024)
  .refine(
    (key) =>
      !/[\\\0]/.test(key) && key.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..'),
    'is not a relative key',
  );

export const TableDump = z.object({
  name: z.string().min(1),
  columns: z.array(z.string().min(1)).min(1),
  rows: z.number().int().min(0),
  /** Relative to the backup folder. */
  file: z.string().regex(/^database\/[^/]+\.jsonl\.gz$/),
  sha256: Sha256,
});
export type TableDump = z.infer<typeof TableDump>;

export const SequenceState = z.object({
  name: z.string().min(1),
  lastValue: z.string().regex(/^-?\d+$/),
  isCalled: z.boolean(),
});
export type SequenceState = z.infer<typeof SequenceState>;

/** One line of blobs.jsonl; sha256 and contentType are known for the objects that were copied. */
export const BlobEntry = z.object({
  key: BlobKey,
  size: z.number().int().min(0),
  sha256: Sha256.optional(),
  contentType: z.string().optional(),
});
export type BlobEntry = z.infer<typeof BlobEntry>;

export const BackupManifest = z.object({
  format: z.literal(BACKUP_FORMAT),
  formatVersion: z.literal(BACKUP_FORMAT_VERSION),
  applianceVersion: z.string(),
  /** The database's clock when the snapshot was taken: the moment the backup shows. */
  createdAt: z.iso.datetime({ offset: true }),
  database: z.object({
    server: z.string(),
    /** The migrations the dumped schema had, in order: a restore rebuilds exactly that schema, then migrates. */
    migrations: z.array(z.string()).min(1),
    tables: z.array(TableDump),
    sequences: z.array(SequenceState),
  }),
  storage: z.object({
    kind: z.enum(['disk', 's3']),
    /** False for S3: blobs.jsonl lists the objects, the bucket is backed up by its own means. */
    blobsIncluded: z.boolean(),
    manifest: z.object({ file: z.literal(BLOB_MANIFEST_FILE), sha256: Sha256, entries: z.number().int().min(0) }),
    bytes: z.number().int().min(0),
    /** Objects rows in the dump use that were deleted before they could be copied (the backup is incomplete). */
    missing: z.array(BlobKey),
    /** Objects recorded but not (yet) written at the snapshot: writes in progress that no row uses yet. */
    notWritten: z.number().int().min(0),
  }),
  counts: z.record(z.string(), z.number().int().min(0)),
});
export type BackupManifest = z.infer<typeof BackupManifest>;

/** Sizes as progress lines and summaries show them. */
export const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

export const blobPath = (dir: string, key: string) => join(dir, BLOBS_DIR, ...key.split('/'));

/** What authenticates a manifest: a BackupKey (backup-key.ts, which uses this module's file modes). */
export interface ManifestVerifier {
  verify(dir: string, manifest: Buffer): Promise<void>;
}

/**
 * The folder's manifest, authenticated under `key`, then checked; a clear error when the folder holds no (finished,
 * readable) backup, or one the key did not sign.
 */
export async function readManifest(dir: string, key: ManifestVerifier): Promise<BackupManifest> {
  let bytes: Buffer;
  try {
    bytes = await readFile(join(dir, MANIFEST_FILE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw Invalid(`${dir} holds no ${MANIFEST_FILE}: not a backup, or one that did not finish`);
    throw error;
  }
  await key.verify(dir, bytes);
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw Invalid(`${join(dir, MANIFEST_FILE)} is not valid JSON`);
  }
  const parsed = BackupManifest.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw Invalid(
      `${join(dir, MANIFEST_FILE)} is not a backup manifest this version reads (${issue.path.join('.') || 'format'}: ${issue.message})`,
    );
  }
  return parsed.data;
}

/** Checks a blobs.jsonl line; the key's shape matters most (it becomes a path under the backup folder). */
export function parseBlobEntry(line: string, lineNumber: number): BlobEntry {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    throw Invalid(`${BLOB_MANIFEST_FILE} line ${lineNumber} is not valid JSON`);
  }
  const parsed = BlobEntry.safeParse(json);
  if (!parsed.success)
    throw Invalid(
      `${BLOB_MANIFEST_FILE} line ${lineNumber}: ${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}`,
    );
  return parsed.data;
}
