// `vpctl restore <dir>`: a backup into a new, empty install; then the migrations this version adds.
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import { MIGRATION_NAMES } from '../db/migration-state.ts';
import { migrate, type Orm } from '../db/orm.ts';
import type { BlobStore } from '../storage/blob-store.ts';
import { Conflict, Invalid } from '../http/errors.ts';
import {
  BLOB_MANIFEST_FILE,
  blobPath,
  mib,
  parseBlobEntry,
  readManifest,
  type BackupManifest,
  type BlobEntry,
} from './backup-format.ts';
import type { BackupKey } from './backup-key.ts';
import { hashFile, readLines } from './hashed-files.ts';
import { throttled, type Progress } from './progress.ts';
import { listTables, loadTables, NOT_DUMPED, textClient } from './table-dump.ts';

export interface Restored {
  manifest: BackupManifest;
  rows: number;
  /** Objects put into the store (a disk backup). */
  blobs: number;
  bytes: number;
  /** Objects of an S3 backup's manifest that the bucket does not hold. */
  absent: string[];
  /** Migrations applied after the rows were loaded. */
  applied: string[];
}

/**
 * Checks the whole backup (its MAC under the operator's backup key, then every checksum) before it touches the
 * install, refuses an install that holds anything, rebuilds the backup's schema from its migrations, loads the rows,
 * puts the objects, then applies the migrations this version adds.
 */
export async function restoreBackup(options: {
  dir: string;
  key: BackupKey;
  orm: Orm;
  databaseUrl: string;
  store: BlobStore;
  progress: Progress;
}): Promise<Restored> {
  const { dir, orm, store, progress } = options;
  const manifest = await readManifest(dir, options.key);
  const backupMigrations = manifest.database.migrations;
  if (backupMigrations.some((name, index) => MIGRATION_NAMES[index] !== name)) {
    throw Conflict(
      `the backup was made by another version of the appliance (${manifest.applianceVersion}) whose migrations this version does not have: restore it with that version or a newer one`,
    );
  }
  await verifyBackup(dir, manifest, progress);

  const client = textClient(options.databaseUrl);
  await client.connect();
  try {
    await requireEmptyInstall(client, store, manifest.storage.blobsIncluded);
    await rebuildSchema(orm, backupMigrations.at(-1)!);
    const rows = await loadTables(client, dir, manifest.database, progress);
    const put = manifest.storage.blobsIncluded ? await putBlobs(dir, store, progress) : { blobs: 0, bytes: 0 };
    const absent = manifest.storage.blobsIncluded ? [] : await absentBlobs(dir, store, progress);
    const applied = await migrate(orm);
    return { manifest, rows, ...put, absent, applied };
  } finally {
    await client.end();
  }
}

/** Each table file and blobs.jsonl against backup.json, and each copied object against blobs.jsonl. */
async function verifyBackup(dir: string, manifest: BackupManifest, progress: Progress): Promise<void> {
  const check = async (file: string, sha256: string) => {
    const found = await hashFile(join(dir, file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw Invalid(`the backup lacks ${file}`);
      throw error;
    });
    if (found.sha256 !== sha256)
      throw Invalid(`${file} does not match its checksum in backup.json: the backup is damaged`);
  };
  for (const table of manifest.database.tables) await check(table.file, table.sha256);
  await check(BLOB_MANIFEST_FILE, manifest.storage.manifest.sha256);
  if (!manifest.storage.blobsIncluded) return;
  const report = throttled(progress);
  let verified = 0;
  for await (const entry of blobEntries(dir)) {
    const found = await hashFile(blobPath(dir, entry.key)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') throw Invalid(`the backup lacks the object ${entry.key}`);
      throw error;
    });
    if (found.size !== entry.size || found.sha256 !== entry.sha256)
      throw Invalid(
        `the object ${entry.key} does not match its checksum in ${BLOB_MANIFEST_FILE}: the backup is damaged`,
      );
    report.report(`verify: ${++verified} of ${manifest.storage.manifest.entries} objects`);
  }
  if (verified !== manifest.storage.manifest.entries)
    throw Invalid(
      `${BLOB_MANIFEST_FILE} lists ${verified} objects where backup.json says ${manifest.storage.manifest.entries}: the backup is damaged`,
    );
  report.last(`verify: every checksum matches (${manifest.database.tables.length} tables, ${verified} objects)`);
}

async function* blobEntries(dir: string): AsyncIterable<BlobEntry> {
  let line = 0;
  for await (const text of readLines(join(dir, BLOB_MANIFEST_FILE), { gzip: false })) {
    line++;
    if (text) yield parseBlobEntry(text, line);
  }
}

/**
 * A new install only: no rows in any of the appliance's tables (a control plane that started once has its first
 * user) and, when the backup brings objects, none in the store. Tables that are not the appliance's are refused.
 */
async function requireEmptyInstall(client: pg.Client, store: BlobStore, bringsBlobs: boolean): Promise<void> {
  const tables = (await listTables(client)).map((table) => table.name);
  if (tables.length > 0 && !tables.includes('schema_migrations')) {
    throw Conflict(
      `the database holds tables that are not the appliance's (${tables.slice(0, 5).join(', ')}): restore into the appliance's own, new database`,
    );
  }
  const checked = tables.filter((name) => !NOT_DUMPED.has(name));
  if (checked.length > 0) {
    const { rows } = await client.query<{ name: string }>(
      checked
        .map(
          (name) =>
            `select ${client.escapeLiteral(name)} as name where exists (select 1 from ${client.escapeIdentifier(name)})`,
        )
        .join(' union all '),
    );
    if (rows.length > 0) {
      const workspaces =
        (await client.query<{ count: string }>('select count(*) from workspaces')).rows[0]?.count ?? '0';
      throw Conflict(
        `the database is not empty (${workspaces} workspaces; rows in ${rows.map((row) => row.name).join(', ')}): restore only into a new install whose control plane has not started yet`,
      );
    }
  }
  if (bringsBlobs) {
    for await (const object of store.list('')) {
      throw Conflict(
        `the blob store is not empty (it holds ${object.key}, among others): restore into a new install with an empty store`,
      );
    }
  }
}

/** The schema exactly as the backup's migrations left it: newer ones an empty database already has are undone. */
async function rebuildSchema(orm: Orm, lastMigration: string): Promise<void> {
  const connection = orm.em.getConnection();
  await connection.transactional(async (trx) => {
    await connection.execute('select pg_advisory_xact_lock(7311001)', [], 'all', trx);
    await orm.migrator.down({ to: lastMigration, transaction: trx });
    await orm.migrator.up({ to: lastMigration, transaction: trx });
  });
}

async function putBlobs(dir: string, store: BlobStore, progress: Progress): Promise<{ blobs: number; bytes: number }> {
  const report = throttled(progress);
  let blobs = 0;
  let bytes = 0;
  for await (const entry of blobEntries(dir)) {
    await store.put(entry.key, createReadStream(blobPath(dir, entry.key)), {
      contentType: entry.contentType ?? 'application/octet-stream',
      expectedBytes: entry.size,
      createOnly: true,
    });
    blobs++;
    bytes += entry.size;
    report.report(`blobs: ${blobs} restored, ${mib(bytes)}`);
  }
  report.last(`blobs: ${blobs} restored, ${mib(bytes)}`);
  return { blobs, bytes };
}

/** The objects of an S3 backup's manifest that the store lacks (its bucket is restored by its own means). */
async function absentBlobs(dir: string, store: BlobStore, progress: Progress): Promise<string[]> {
  const report = throttled(progress);
  const absent: string[] = [];
  let checked = 0;
  for await (const entry of blobEntries(dir)) {
    if (!(await store.head(entry.key))) absent.push(entry.key);
    report.report(`blobs: ${++checked} checked in the store`);
  }
  report.last(`blobs: ${checked} checked in the store, ${absent.length} absent`);
  return absent;
}
