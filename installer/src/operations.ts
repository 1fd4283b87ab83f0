// The commands that open what they need themselves: backup, restore and doctor look at the database as it is
// (never migrated first) and decide their own exit status.
import type { EntityManager } from '@mikro-orm/postgresql';
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { AppConfig } from '@vp/config';
import type { Logger } from 'pino';
import { writeBackup } from '../../control-plane/src/backup/backup.ts';
import { recordBackupRun } from '../../control-plane/src/backup/backup-run.store.ts';
import { mib } from '../../control-plane/src/backup/backup-format.ts';
import { BackupKey } from '../../control-plane/src/backup/backup-key.ts';
import { restoreBackup } from '../../control-plane/src/backup/restore.ts';
import { formatCheck, runDoctor } from '../../control-plane/src/health/doctor.ts';
import { openDatabase } from '../../control-plane/src/server.ts';
import type { BlobStore } from '../../control-plane/src/storage/blob-store.ts';
import { openBlobStore } from '../../control-plane/src/storage/store-from-config.ts';

/** Exit statuses: 0 done, 1 the command failed, 2 usage error, 78 invalid configuration (as the server). */
export const EXIT_FAILED = 1;
export const EXIT_CONFIG = 78;

export interface OperationContext {
  config: AppConfig;
  log: Logger;
  print: (text: string) => void;
  note: (text: string) => void;
  /** A progress line, on stderr at once (notes wait for the end). */
  progress: (text: string) => void;
}

/** A command run once the configuration is loaded; returns its exit status. `badConfig`: it reports an invalid configuration itself. */
export interface Operation {
  run(context: OperationContext): Promise<number>;
  badConfig?(message: string, print: (text: string) => void): number;
}

/** The database (migrated first, or left as it is) for `work`, closed (and an embedded one stopped) after. */
export async function withDatabase<T>(
  config: AppConfig,
  log: Logger,
  migrations: 'apply' | 'leave',
  work: (database: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>,
): Promise<T> {
  const database = await openDatabase(config, log, { migrations });
  try {
    return await work(database);
  } finally {
    await database.orm.close();
    await database.embedded?.stop();
  }
}

async function withStore<T>(config: AppConfig, work: (store: BlobStore) => Promise<T>): Promise<T> {
  const store = await openBlobStore(config.storageUrl, config.dataDir);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

async function folderBytes(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const sizes = await Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => (await stat(join(entry.parentPath, entry.name))).size),
  );
  return sizes.reduce((sum, size) => sum + size, 0);
}

const seconds = (startedAt: number) => `${((performance.now() - startedAt) / 1000).toFixed(1)} s`;
const count = (value: number) => value.toLocaleString('en-US');

/** Where the backup key is kept unless --key-file says: beside the signing secret, never in a backup. */
export const defaultBackupKeyFile = (config: Pick<AppConfig, 'dataDir'>) => join(config.dataDir, 'backup-key');

export const backupCommand: (dir: string, keyFile: string | undefined) => Operation = (dir, keyFile) => ({
  run: async ({ config, log, print, note, progress }) => {
    const startedAt = performance.now();
    const target = resolve(dir);
    const keyPath = resolve(keyFile ?? defaultBackupKeyFile(config));
    const { key, created } = await BackupKey.readOrCreate(keyPath);
    const manifest = await withDatabase(config, log, 'leave', async ({ url, orm }) => {
      const written = await withStore(config, (store) =>
        writeBackup({ databaseUrl: url, store, dir: target, key, progress: (text) => progress(`backup: ${text}`) }),
      );
      // For the metrics (the age of the last complete backup); a database not migrated to have the table yet is noted.
      await recordBackupRun(orm.em.fork() as EntityManager, {
        complete: written.storage.missing.length === 0,
        dir: target,
      }).catch((error: unknown) => note(`The backup was not recorded for the metrics: ${String(error)}`));
      return written;
    });
    if (created)
      note(
        `A new backup key (id ${key.id}) was written to ${keyPath}: keep a copy apart from the backups; vpctl restore needs it.`,
      );
    const { database, storage, counts } = manifest;
    print(`Backup written to ${target} (${mib(await folderBytes(target))} in ${seconds(startedAt)})`);
    print(
      `  database: as of ${manifest.createdAt}, ${database.tables.length} tables, ${count(counts.rows)} rows, ${database.migrations.length} migrations (${database.server})`,
    );
    print(
      storage.blobsIncluded
        ? `  blobs:    ${count(storage.manifest.entries)} objects, ${mib(storage.bytes)}, copied with their SHA-256 (local disk)`
        : `  blobs:    ${count(storage.manifest.entries)} objects listed in blobs.jsonl, not copied: they stay in the S3 bucket, which is backed up by its own means (e.g. bucket versioning or replication)`,
    );
    if (storage.notWritten > 0)
      note(
        `${storage.notWritten} recorded objects were not written yet at the snapshot (writes in progress, used by no row yet); they are not part of this backup.`,
      );
    if (storage.missing.length === 0) return 0;
    note(
      `vpctl: ${storage.missing.length} objects that rows use were deleted while the backup ran (listed in backup.json, "missing"): this backup is incomplete; run it again.`,
    );
    return EXIT_FAILED;
  },
});

export const restoreCommand: (dir: string, keyFile: string | undefined) => Operation = (dir, keyFile) => ({
  run: async ({ config, log, print, note, progress }) => {
    const startedAt = performance.now();
    const source = resolve(dir);
    const key = await BackupKey.read(resolve(keyFile ?? defaultBackupKeyFile(config)));
    const restored = await withDatabase(config, log, 'leave', ({ orm, url }) =>
      withStore(config, (store) =>
        restoreBackup({
          dir: source,
          key,
          orm,
          databaseUrl: url,
          store,
          progress: (text) => progress(`restore: ${text}`),
        }),
      ),
    );
    const { manifest } = restored;
    print(
      `Restored the backup of ${manifest.createdAt} (appliance ${manifest.applianceVersion}) from ${source} in ${seconds(startedAt)}`,
    );
    print(
      `  database: ${manifest.database.tables.length} tables, ${count(restored.rows)} rows; migrations applied since: ${restored.applied.join(', ') || 'none'}`,
    );
    if (manifest.storage.blobsIncluded)
      print(`  blobs:    ${count(restored.blobs)} objects, ${mib(restored.bytes)}, every checksum verified`);
    else
      print(
        `  blobs:    ${count(manifest.storage.manifest.entries)} objects listed; the backup holds none (S3): restore the bucket by its own means`,
      );
    if (restored.absent.length > 0)
      note(
        `${restored.absent.length} listed objects are not in the store yet, e.g. ${restored.absent.slice(0, 3).join(', ')}`,
      );
    if (manifest.storage.missing.length > 0)
      note(`The backup was incomplete: ${manifest.storage.missing.length} objects that rows use were missing from it.`);
    return 0;
  },
});

export const doctorCommand: Operation = {
  run: async ({ config, log, print }) => {
    const results = await runDoctor(config, log);
    for (const result of results) print(formatCheck(result));
    return results.some((result) => result.status === 'FAIL') ? EXIT_FAILED : 0;
  },
  badConfig: (message, print) => {
    print(
      formatCheck({
        status: 'FAIL',
        check: 'configuration',
        message,
        fix: 'fix the environment (see config/example.env); the control plane does not start with it',
      }),
    );
    return EXIT_CONFIG;
  },
};
