// `vpctl backup <dir>`: the database's rows and the stored objects they use, from one snapshot.
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { migrationState } from '../db/migration-state.ts';
import type { BlobStore } from '../storage/blob-store.ts';
import { Conflict } from '../http/errors.ts';
import { RELEASE_VERSION } from '../release-version.ts';
import { backUpBlobs } from './backup-blobs.ts';
import type { BackupKey } from './backup-key.ts';
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  BLOB_MANIFEST_FILE,
  FILE_MODE,
  FOLDER_MODE,
  MANIFEST_FILE,
  type BackupManifest,
  type TableDump,
} from './backup-format.ts';
import type { Progress } from './progress.ts';
import { dumpTables, sequenceStates, textClient, useTextSettings } from './table-dump.ts';

/** Rows of these tables are counted in backup.json's summary. */
const COUNTED = ['workspaces', 'users', 'datasets', 'images', 'models', 'projects', 'hosts'];

/** The folder, created if need be, its owner's only; refused if it holds anything (a backup never mixes with another). */
async function emptyFolder(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: FOLDER_MODE });
  const entries = await readdir(dir);
  if (entries.length > 0) throw Conflict(`${dir} is not empty: back up into a new folder`);
  await chmod(dir, FOLDER_MODE);
}

/**
 * Takes one REPEATABLE READ snapshot and writes, from it, every table's rows, the sequences, the migration list
 * and blobs.jsonl (with the objects themselves from a disk store), then backup.json. Uploads in progress are
 * consistent by the writers' order: an object is complete before any row that uses it commits, so a row in the
 * snapshot finds its bytes, and an object whose row came later is simply not part of this backup.
 */
export async function writeBackup(options: {
  databaseUrl: string;
  store: BlobStore;
  dir: string;
  key: BackupKey;
  progress: Progress;
}): Promise<BackupManifest> {
  const { dir, store, progress } = options;
  await emptyFolder(dir);
  const client = textClient(options.databaseUrl);
  await client.connect();
  try {
    await client.query('begin isolation level repeatable read read only');
    await useTextSettings(client);
    const [snapshot] = (
      await client.query<{ created_at: string; server: string }>(
        `select to_json(now()) #>> '{}' as created_at, version() as server`,
      )
    ).rows;
    const migrations = (
      await client.query<{ name: string }>('select name from schema_migrations order by id')
    ).rows.map((row) => row.name);
    const { unknown } = migrationState(migrations);
    if (unknown.length > 0)
      throw Conflict(
        `the database was migrated by a newer version of the appliance (${unknown.join(', ')}): back it up with that version's vpctl`,
      );
    progress(`snapshot taken at ${snapshot.created_at}`);
    const tables = await dumpTables(client, dir, progress);
    const sequences = await sequenceStates(client);
    const blobs = await backUpBlobs(client, store, dir, progress);
    await client.query('commit');
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      formatVersion: BACKUP_FORMAT_VERSION,
      applianceVersion: RELEASE_VERSION,
      createdAt: snapshot.created_at,
      database: { server: snapshot.server.split(' on ')[0], migrations, tables, sequences },
      storage: {
        kind: store.kind,
        blobsIncluded: store.kind === 'disk',
        manifest: { file: BLOB_MANIFEST_FILE, sha256: blobs.sha256, entries: blobs.entries },
        bytes: blobs.bytes,
        missing: blobs.missing,
        notWritten: blobs.notWritten,
      },
      counts: { ...rowCounts(tables), blobs: blobs.entries, blobBytes: blobs.bytes },
    };
    const text = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    await options.key.sign(dir, text);
    // Last: a folder with a backup.json holds a finished backup.
    await writeFile(join(dir, MANIFEST_FILE), text, { flag: 'wx', mode: FILE_MODE });
    return manifest;
  } finally {
    await client.end();
  }
}

function rowCounts(tables: TableDump[]): Record<string, number> {
  const rows = new Map(tables.map((table) => [table.name, table.rows]));
  return {
    ...Object.fromEntries(COUNTED.map((name) => [name, rows.get(name) ?? 0])),
    tables: tables.length,
    rows: tables.reduce((sum, table) => sum + table.rows, 0),
  };
}
