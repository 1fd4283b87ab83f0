// The one list of columns that hold blob-store keys (storage/blob-keys.ts): every migrated column whose name looks like
// a key is in it (so a migration adding one fails here until the backup, the sweep and erase are told), nothing in it
// is stale, the statements built from it run, and a backup of an appliance holding an image indexed in place lists the
// image's thumbnail and not its original (which stays in the customer's storage), with nothing reported missing.
import { Readable } from 'node:stream';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { backUpBlobs } from '../control-plane/src/backup/backup-blobs.ts';
import { BLOB_MANIFEST_FILE } from '../control-plane/src/backup/backup-format.ts';
import { newId } from '../control-plane/src/db/ids.ts';
import {
  BLOB_KEY_COLUMNS,
  datasetFilesSql,
  imageKey,
  snapshotKeysSql,
  thumbnailKey,
  unreferencedSql,
} from '../control-plane/src/storage/blob-keys.ts';
import { DiskBlobStore } from '../control-plane/src/storage/disk-store.ts';
import { createTestDatabase } from './helpers/db.ts';

/** A column whose name says it holds a key or a blob; or an image-like row (a content hash with an extension). */
const LOOKS_LIKE_A_KEY = /^key$|_key$|_keys$|^blob|_blob/;

async function connect(t: Test): Promise<pg.Client> {
  const db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.teardown(async () => {
    await client.end();
    await db.drop();
  });
  return client;
}

const listed = (table: string) =>
  BLOB_KEY_COLUMNS.filter((entry) => entry.table === table).flatMap((entry) => entry.column.split(', '));

t.test('every migrated column that looks like a blob key is in the list, and every listed column exists', async (t) => {
  const client = await connect(t);
  const { rows } = await client.query<{ table_name: string; column_name: string }>(
    `select table_name, column_name from information_schema.columns where table_schema = 'public' order by 1, 2`,
  );
  const columns = new Map<string, Set<string>>();
  for (const row of rows) columns.set(row.table_name, (columns.get(row.table_name) ?? new Set()).add(row.column_name));
  const unlisted: string[] = [];
  for (const [table, names] of columns) {
    for (const name of names)
      if (LOOKS_LIKE_A_KEY.test(name) && !listed(table).includes(name)) unlisted.push(`${table}.${name}`);
    if (names.has('hash') && names.has('ext') && !(listed(table).includes('hash') && listed(table).includes('ext')))
      unlisted.push(`${table}.hash, ext`);
  }
  t.same(
    unlisted,
    [],
    'columns holding keys that storage/blob-keys.ts does not list: add them, saying what the backup, the sweep and erase do with them',
  );
  const stale = BLOB_KEY_COLUMNS.flatMap((entry) =>
    entry.column
      .split(', ')
      .filter((name) => !columns.get(entry.table)?.has(name))
      .map((name) => `${entry.table}.${name}`),
  );
  t.same(stale, [], 'every listed column exists');
  t.ok(
    BLOB_KEY_COLUMNS.every((entry) => (entry.read === 'json') === (entry.path !== undefined)),
    'a path is given for the keys in JSON documents, and only for them',
  );
});

t.test('the statements built from the list run', async (t) => {
  const client = await connect(t);
  await client.query(`explain ${snapshotKeysSql()}`);
  await client.query(`explain select o.key from stored_objects o where ${unreferencedSql()}`);
  const files = datasetFilesSql();
  let index = 0;
  await client.query(`explain ${files.sql.replace(/\?/g, () => `$${++index}`)}`, Array(files.params).fill('ds_none'));
  t.equal(index, files.params, 'one parameter per column');
  t.match(files.sql, /from datasets where id = \?/, "the dataset's export");
  t.match(files.sql, /dataset_versions where dataset_id = /, "its versions' NDJSON");
});

t.test('a backup of an image indexed in place lists its thumbnail, not its original, and misses nothing', async (t) => {
  const client = await connect(t);
  const dir = mkdtempSync(join(tmpdir(), 'vp-blob-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new DiskBlobStore(join(dir, 'store'));
  const [userId, workspaceId, datasetId] = [newId(), newId(), newId()];
  await client.query(
    `insert into users (id, created_at, updated_at, username, name) values ($1, now(), now(), 'keys', 'Keys')`,
    [userId],
  );
  await client.query(
    `insert into workspaces (id, created_at, updated_at, handle, name, kind, region, owner_id) values ($1, now(), now(), 'keys', 'Keys', 'personal', 'us', $2)`,
    [workspaceId, userId],
  );
  await client.query(
    `insert into datasets (id, created_at, updated_at, workspace_id, slug, name) values ($1, now(), now(), $2, 'mixed', 'Mixed')`,
    [datasetId, workspaceId],
  );
  const stored = { hash: 'a'.repeat(64), ext: 'jpg' };
  const inPlace = { hash: 'b'.repeat(64), ext: 'png' };
  const keys = [
    imageKey(workspaceId, stored.hash, stored.ext),
    thumbnailKey(workspaceId, stored.hash),
    thumbnailKey(workspaceId, inPlace.hash),
  ];
  for (const key of keys) {
    await store.put(key, Readable.from([Buffer.from(key)]), {
      contentType: 'application/octet-stream',
      expectedBytes: Buffer.byteLength(key),
    });
    await client.query(
      `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values ($1, now(), now(), $2, 'datasetImages', $3, $4)`,
      [newId(), workspaceId, key, Buffer.byteLength(key)],
    );
  }
  for (const [image, referenceKey] of [
    [stored, null],
    [inPlace, 'set/b.png'],
  ] as const) {
    await client.query(
      `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, bytes, reference_key) values ($1, now(), now(), $2, $3, $4, $5, $6, 10, $7)`,
      [newId(), workspaceId, datasetId, image.hash, image.ext, `${image.hash.slice(0, 4)}.${image.ext}`, referenceKey],
    );
  }
  const backup = join(dir, 'backup');
  mkdirSync(backup);
  await client.query('begin isolation level repeatable read read only');
  const copied = await backUpBlobs(client, store, backup, () => {});
  await client.query('commit');
  const listedKeys = readFileSync(join(backup, BLOB_MANIFEST_FILE), 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { key: string }).key)
    .sort();
  t.same(
    listedKeys,
    [...keys].sort(),
    "the stored image, its thumbnail and the thumbnail of the image indexed in place; not that image's original",
  );
  t.same(
    copied.missing,
    [],
    'the original of the image indexed in place is not reported missing: it never was in the store',
  );
  t.equal(copied.notWritten, 0);
});
