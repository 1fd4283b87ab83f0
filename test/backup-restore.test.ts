// vpctl backup and restore, for real: a world with datasets, images, a dataset version and model weights is backed up
// while an upload is in progress, restored into a new install (an empty database and data dir), and a control plane
// started on it answers the same GETs with the same bytes behind every URL. A backup is its owner's only (0700/0600)
// and authenticated with the operator's backup key: a restore refuses an install that holds anything, and a damaged,
// altered or unauthenticated backup before it writes anything; a backup of an older schema restores into this one; an
// appliance with a dataset indexed in place backs up without the images it never stored, and restores.
import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { displayPrefix, generateApiKey, hashApiKey } from '../control-plane/src/auth/key-format.ts';
import { BackupManifest, BlobEntry } from '../control-plane/src/backup/backup-format.ts';
import { MIGRATION_NAMES } from '../control-plane/src/db/migration-state.ts';
import { newId } from '../control-plane/src/db/ids.ts';
import { initORM } from '../control-plane/src/db/orm.ts';
import type { BlobStore } from '../control-plane/src/storage/blob-store.ts';
import { answersByPath } from './helpers/answers.ts';
import { waitForJob } from './helpers/archives.ts';
import { adminQuery, createEmptyDatabase, createTestDatabase } from './helpers/db.ts';
import { shapeImage } from './helpers/images.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { runNode } from './helpers/run-node.ts';
import { startS3Server } from './helpers/s3-server.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const SECRET = randomBytes(32).toString('hex');
const LIMITS = { RATE_LIMIT_DEFAULT: '1000000', RATE_LIMIT_UPLOAD: '1000000', RATE_LIMIT_EXPORT: '1000000' };

const vpctl = (env: Record<string, string>, ...args: string[]) =>
  runNode(['installer/src/vpctl.ts', ...args], { LOG_LEVEL: 'warn', ...env });
/** Where `vpctl backup` keeps the backup key unless told: in the appliance's data dir. */
const keyFileOf = (dataDir: string) => join(dataDir, 'backup-key');

function tempDir(t: Test, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Every folder and file under `dir` whose permissions are not 0700 (folders) or 0600 (files), with its mode. */
function notOwnersOnly(dir: string): string[] {
  const wrong: string[] = [];
  for (const entry of [dir, ...readdirSync(dir, { recursive: true }).map((name) => join(dir, String(name)))]) {
    const stats = statSync(entry);
    const mode = stats.mode & 0o777;
    if (mode !== (stats.isDirectory() ? 0o700 : 0o600)) wrong.push(`${entry} ${mode.toString(8)}`);
  }
  return wrong;
}

/** Every object in a store, key → SHA-256 of its bytes. */
async function storeContents(store: BlobStore): Promise<Map<string, string>> {
  const contents = new Map<string, string>();
  for await (const { key } of store.list('')) {
    const read = await store.get(key);
    const chunks: Buffer[] = [];
    for await (const chunk of read!.stream) chunks.push(chunk as Buffer);
    contents.set(key, sha256(Buffer.concat(chunks)));
  }
  return contents;
}

interface Answers {
  /** Bodies by request, with each signed URL reduced to its path (secrets, ports and expiries differ). */
  bodies: Record<string, unknown>;
  /** The signed URLs found, by path. */
  urls: Map<string, string>;
}

async function answers(server: TestServer, requests: Array<[string, string]>): Promise<Answers> {
  const urls = new Map<string, string>();
  return { bodies: await answersByPath(server, requests, urls), urls };
}

async function fetchedHash(url: string): Promise<string> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return sha256(Buffer.from(await response.arrayBuffer()));
}

/** The SHA-256 of what each URL (by path) serves. */
const bytesBehind = async (urls: Map<string, string>) =>
  new Map(await Promise.all([...urls].map(async ([path, url]) => [path, await fetchedHash(url)] as const)));

/** How many tables a database has: none, for a new install a refused restore left alone. */
async function tableCount(url: string): Promise<number> {
  const { rows } = await adminQuery(
    "select count(*) from information_schema.tables where table_schema = 'public'",
    [],
    url,
  );
  return Number((rows[0] as { count: string }).count);
}

/** A PUT to a signed upload URL that sends half its body and waits: an upload in progress. */
async function startSlowUpload(
  server: TestServer,
  key: string,
  modelId: string,
  bytes: Buffer,
): Promise<{ sessionId: string; finish(): Promise<number> }> {
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    server,
    'POST',
    '/api/upload/signed-url',
    {
      key,
      body: {
        assetType: 'models',
        assetId: modelId,
        filename: 'slow.pt',
        contentType: 'application/octet-stream',
        totalBytes: bytes.length,
      },
    },
  );
  if (ticket.status !== 200) throw new Error(`signed URL: ${ticket.status}`);
  const put = request(ticket.body.uploadUrl, {
    method: 'PUT',
    headers: { ...ticket.body.headers, 'content-length': String(bytes.length) },
  });
  const status = new Promise<number>((resolve, reject) => {
    put.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    put.on('error', reject);
  });
  put.write(bytes.subarray(0, bytes.length / 2));
  // In progress once its temp file holds bytes.
  const tmp = join(server.dataDir, 'blobs', '.tmp');
  const deadline = Date.now() + 10_000;
  while (!(existsSync(tmp) && readdirSync(tmp).length > 0)) {
    if (Date.now() > deadline) throw new Error('the upload did not start');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    sessionId: ticket.body.sessionId,
    finish: () => {
      put.end(bytes.subarray(bytes.length / 2));
      return status;
    },
  };
}

t.test('back up during an upload, restore into a new install: the same answers and the same bytes', async (t) => {
  const world = await startWorld(t, { SIGNING_SECRET: SECRET });
  const { server } = world;
  await createShapesDataset(t, world, world.alice, 'alice', 'shapes', { train: 12, val: 4 });
  await createShapesDataset(t, world, world.team, 'acme-team', 'parts', { train: 6, val: 2 });
  t.equal(
    (
      await call(server, 'POST', '/api/datasets/alice/shapes/export', {
        key: world.alice,
        body: { description: 'first' },
      })
    ).status,
    200,
    'a saved version',
  );
  await createProject(world, world.alice, { project: 'vision', name: 'Vision' });
  const detector = await createModel(world, world.alice, {
    project: 'vision',
    model: 'detector',
    name: 'Detector',
    task: 'detect',
  });
  await uploadWeights(world, world.alice, detector.id, randomBytes(300_000));
  const candidate = await createModel(world, world.alice, {
    project: 'vision',
    model: 'candidate',
    name: 'Candidate',
    task: 'detect',
  });

  const requests: Array<[string, string]> = [
    [world.alice, '/api/account/summary'],
    [world.alice, '/api/storage'],
    [world.alice, '/api/datasets/alice'],
    [world.alice, '/api/datasets/alice/shapes'],
    [world.alice, '/api/datasets/alice/shapes/images?limit=1000&sort=name-asc'],
    [world.alice, '/api/datasets/alice/shapes/export?version=1'],
    [world.alice, '/api/projects/alice'],
    [world.alice, '/api/models/alice/vision'],
    [world.alice, '/api/models/alice/vision/detector'],
    [world.alice, '/api/models/alice/vision/detector/files'],
    [world.alice, '/api/models/alice/vision/candidate'],
    [world.team, '/api/account/summary'],
    [world.team, '/api/datasets/acme-team'],
    [world.team, '/api/datasets/acme-team/parts/images?limit=1000&sort=name-asc'],
  ];
  const slow = await startSlowUpload(server, world.alice, candidate.id, randomBytes(2_000_000));
  // Some GETs write a cache on first use (a dataset's export): the answers compared are those once it is there.
  await answers(server, requests);
  const before = await answers(server, requests);
  const storedBefore = await storeContents(server.storage.store);

  const backupDir = join(tempDir(t, 'vp-backup-'), 'backup');
  const source = { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, SIGNING_SECRET: SECRET };
  const started = performance.now();
  // Under the most permissive umask: the backup's own modes hold whatever the operator's shell has.
  const umask = process.umask(0);
  const backup = await vpctl(source, 'backup', backupDir).finally(() => process.umask(umask));
  const backupSeconds = (performance.now() - started) / 1000;
  t.equal(backup.code, 0, backup.stderr);
  t.strictSame(
    notOwnersOnly(backupDir),
    [],
    "every folder of the backup is 0700 and every file 0600: key hashes, credentials and files are its owner's only",
  );
  const keyFile = keyFileOf(server.dataDir);
  t.match(backup.stderr, `A new backup key (id `);
  t.match(backup.stderr, `) was written to ${keyFile}: keep a copy apart from the backups; vpctl restore needs it.\n`);
  t.equal(statSync(keyFile).mode & 0o777, 0o600, "the key is its owner's only");
  t.match(
    backup.stdout,
    /^Backup written to .*backup \([\d.]+ [KM]iB in [\d.]+ s\)\n {2}database: as of .*, \d+ tables, [\d,]+ rows, \d+ migrations/,
  );
  t.match(backup.stdout, /blobs: +\d+ objects, [\d.]+ [KM]iB, copied with their SHA-256 \(local disk\)/);
  t.match(backup.stderr, /backup: database: images, 24 rows\n/, 'progress lines on stderr');
  t.equal(await slow.finish(), 200, 'the upload in progress completes after the backup');
  t.equal(
    (await call(server, 'POST', '/api/upload/complete', { key: world.alice, body: { sessionId: slow.sessionId } }))
      .status,
    200,
  );

  const manifest = BackupManifest.parse(JSON.parse(readFileSync(join(backupDir, 'backup.json'), 'utf8')));
  t.match(manifest, {
    format: 'vp-appliance-backup',
    formatVersion: 1,
    database: { migrations: MIGRATION_NAMES },
    storage: { kind: 'disk', blobsIncluded: true, missing: [] },
  });
  t.match(manifest.counts, { workspaces: 6, users: 5, datasets: 2, images: 24, models: 2, projects: 1 });
  const listed = readFileSync(join(backupDir, 'blobs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => BlobEntry.parse(JSON.parse(line)));
  t.same(
    new Map(listed.map((entry) => [entry.key, entry.sha256])),
    storedBefore,
    'every stored object with its SHA-256, not the one being uploaded',
  );
  t.notOk(listed.some((entry) => entry.key.includes(slow.sessionId)));
  t.comment(`backup of ${listed.length} objects in ${backupSeconds.toFixed(1)} s: ${backup.stdout.split('\n')[0]}`);

  // A new install: an empty database, an empty data dir.
  const target = await createEmptyDatabase();
  t.teardown(target.drop);
  const dataDir = tempDir(t, 'vp-restored-');
  const install = { DATABASE_URL: target.url, DATA_DIR: dataDir, SIGNING_SECRET: SECRET };
  const restore = await vpctl(install, 'restore', backupDir, '--key-file', keyFile);
  t.equal(restore.code, 0, restore.stderr);
  t.match(
    restore.stdout,
    /^Restored the backup of .* from .* in [\d.]+ s\n {2}database: \d+ tables, [\d,]+ rows; migrations applied since: none\n {2}blobs: +\d+ objects, .*every checksum verified/,
  );
  t.match(restore.stderr, /restore: verify: every checksum matches/);

  const restored = await startTestServer(t, {
    databaseUrl: target.url,
    env: { DATA_DIR: dataDir, SIGNING_SECRET: SECRET, ...LIMITS },
  });
  const after = await answers(restored, requests);
  for (const [, path] of requests) t.same(after.bodies[path], before.bodies[path], `GET ${path} answers the same`);
  t.ok(before.urls.size > 20, 'signed URLs of images, thumbnails, weights and the version');
  t.same(await bytesBehind(after.urls), await bytesBehind(before.urls), 'the same bytes behind every URL');
  t.same(await storeContents(restored.storage.store), storedBefore, 'the same objects with the same bytes');

  // Only into an install that holds nothing.
  const again = await vpctl(install, 'restore', backupDir, '--key-file', keyFile);
  t.equal(again.code, 1);
  t.equal(again.stdout, '');
  t.match(
    again.stderr,
    /vpctl: the database is not empty \(6 workspaces; rows in .*\): restore only into a new install whose control plane has not started yet\n$/,
  );
  const emptyDatabase = await createEmptyDatabase();
  t.teardown(emptyDatabase.drop);
  const usedStore = await vpctl(
    { ...install, DATABASE_URL: emptyDatabase.url },
    'restore',
    backupDir,
    '--key-file',
    keyFile,
  );
  t.equal(usedStore.code, 1);
  t.match(
    usedStore.stderr,
    /vpctl: the blob store is not empty \(it holds ws\/.*\): restore into a new install with an empty store\n$/,
  );
  const intoUsedFolder = await vpctl(source, 'backup', backupDir);
  t.match(intoUsedFolder, { code: 1, stderr: /vpctl: .*backup is not empty: back up into a new folder\n$/ });
});

t.test('with S3 storage: the files are listed, not copied; a restore says which the bucket lacks', async (t) => {
  const s3 = await startS3Server(t);
  const world = await startWorld(t, { STORAGE_URL: s3.storageUrl });
  await createProject(world, world.alice, { project: 'vision', name: 'Vision' });
  const model = await createModel(world, world.alice, {
    project: 'vision',
    model: 'detector',
    name: 'Detector',
    task: 'detect',
  });
  await uploadWeights(world, world.alice, model.id, randomBytes(50_000));
  const dir = join(tempDir(t, 'vp-backup-'), 'backup');
  const backup = await vpctl(
    { DATABASE_URL: world.server.databaseUrl, DATA_DIR: world.server.dataDir, STORAGE_URL: s3.storageUrl },
    'backup',
    dir,
  );
  t.equal(backup.code, 0, backup.stderr);
  t.match(
    backup.stdout,
    /blobs: +1 objects listed in blobs\.jsonl, not copied: they stay in the S3 bucket, which is backed up by its own means/,
  );
  t.notOk(existsSync(join(dir, 'blobs')), 'no copies');
  const [entry] = readFileSync(join(dir, 'blobs.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => BlobEntry.parse(JSON.parse(line)));
  t.match(entry, { key: /\/best\.pt$/, size: 50_000 });
  t.notOk('sha256' in entry, 'not read, so no checksum');

  const restoreInto = async () => {
    const target = await createEmptyDatabase();
    t.teardown(target.drop);
    return vpctl(
      { DATABASE_URL: target.url, DATA_DIR: tempDir(t, 'vp-restored-'), STORAGE_URL: s3.storageUrl },
      'restore',
      dir,
      '--key-file',
      keyFileOf(world.server.dataDir),
    );
  };
  const restored = await restoreInto();
  t.equal(restored.code, 0, restored.stderr);
  t.match(
    restored.stdout,
    /blobs: +1 objects listed; the backup holds none \(S3\): restore the bucket by its own means/,
  );
  t.notMatch(restored.stderr, /not in the store/, 'the bucket has them all');
  await world.server.storage.store.delete(entry.key);
  const lacking = await restoreInto();
  t.equal(lacking.code, 0, lacking.stderr);
  t.match(lacking.stderr, `1 listed objects are not in the store yet, e.g. ${entry.key}`);
});

t.test('a damaged backup is refused before anything is written', async (t) => {
  const server = await startTestServer(t);
  await server.services().account.createUser('alice');
  const dir = join(tempDir(t, 'vp-backup-'), 'backup');
  t.equal((await vpctl({ DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir }, 'backup', dir)).code, 0);
  const users = join(dir, 'database', 'users.jsonl.gz');
  const bytes = readFileSync(users);
  bytes[bytes.length - 5] ^= 0xff;
  writeFileSync(users, bytes);
  const target = await createEmptyDatabase();
  t.teardown(target.drop);
  const restore = await vpctl(
    { DATABASE_URL: target.url, DATA_DIR: tempDir(t, 'vp-restored-') },
    'restore',
    dir,
    '--key-file',
    keyFileOf(server.dataDir),
  );
  t.match(restore, {
    code: 1,
    stdout: '',
    stderr: /vpctl: database\/users\.jsonl\.gz does not match its checksum in backup\.json: the backup is damaged\n$/,
  });
  const tables = await adminQuery(
    "select count(*) from information_schema.tables where table_schema = 'public'",
    [],
    target.url,
  );
  t.equal(Number((tables.rows[0] as { count: string }).count), 0, 'the database is untouched');
  t.match(
    await vpctl(
      { DATABASE_URL: target.url, DATA_DIR: tempDir(t, 'vp-restored-') },
      'restore',
      tempDir(t, 'vp-nothing-'),
      '--key-file',
      keyFileOf(server.dataDir),
    ),
    {
      code: 1,
      stderr: /holds no backup\.json: not a backup, or one that did not finish\n$/,
    },
  );
});

t.test("a backup of an older version's schema restores into this one, then migrates", async (t) => {
  const older = await createEmptyDatabase();
  t.teardown(older.drop);
  const orm = await initORM(older.url);
  await orm.migrator.up({ to: MIGRATION_NAMES.at(-2) });
  await orm.close();
  const userId = newId();
  await adminQuery(
    "insert into users (id, created_at, updated_at, username, name) values ($1, now(), now(), 'oldtimer', 'Old Timer')",
    [userId],
    older.url,
  );
  await adminQuery(
    "insert into workspaces (id, created_at, updated_at, handle, name, kind, region, owner_id) values ($1, now(), now(), 'oldtimer', 'Old Timer', 'personal', 'us', $2)",
    [newId(), userId],
    older.url,
  );
  const dir = join(tempDir(t, 'vp-backup-'), 'backup');
  const keyFile = join(tempDir(t, 'vp-key-'), 'backup-key');
  const backup = await vpctl(
    { DATABASE_URL: older.url, DATA_DIR: tempDir(t, 'vp-older-') },
    'backup',
    dir,
    '--key-file',
    keyFile,
  );
  t.equal(backup.code, 0, backup.stderr);
  t.match(backup.stdout, `${MIGRATION_NAMES.length - 1} migrations`, 'backed up as it is, not migrated first');

  // Into a database this version has migrated already (empty): the newer migration is undone, the rows loaded, then it is applied again.
  const target = await createTestDatabase();
  t.teardown(target.drop);
  const restore = await vpctl(
    { DATABASE_URL: target.url, DATA_DIR: tempDir(t, 'vp-restored-') },
    'restore',
    dir,
    '--key-file',
    keyFile,
  );
  t.equal(restore.code, 0, restore.stderr);
  t.match(restore.stdout, `migrations applied since: ${MIGRATION_NAMES.at(-1)}\n`);
  const rows = await adminQuery(
    'select (select count(*) from schema_migrations) as migrations, (select username from users) as username',
    [],
    target.url,
  );
  t.match(rows.rows[0], { migrations: String(MIGRATION_NAMES.length), username: 'oldtimer' });
});

t.test(
  'an altered backup, one without its MAC and a restore without its key are refused before anything is written',
  async (t) => {
    const server = await startTestServer(t);
    await server.services().account.createUser('alice');
    await server.services().apiKeys.create('alice', 'a');
    const keyFile = join(tempDir(t, 'vp-key-'), 'backup-key');
    const dir = join(tempDir(t, 'vp-backup-'), 'backup');
    const backup = await vpctl(
      { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir },
      'backup',
      dir,
      '--key-file',
      keyFile,
    );
    t.equal(backup.code, 0, backup.stderr);
    t.ok(existsSync(join(dir, 'backup.mac')));

    const restoreInto = async (...args: string[]) => {
      const target = await createEmptyDatabase();
      t.teardown(target.drop);
      const dataDir = tempDir(t, 'vp-restored-');
      const run = await vpctl({ DATABASE_URL: target.url, DATA_DIR: dataDir }, 'restore', dir, ...args);
      return { run, tables: await tableCount(target.url), files: readdirSync(dataDir) };
    };
    const refused = async (args: string[], message: string | RegExp, what: string) => {
      const { run, tables, files } = await restoreInto(...args);
      t.match(run, { code: 1, stdout: '', stderr: message }, what);
      t.equal(tables, 0, `${what}: the database is untouched`);
      t.strictSame(files, [], `${what}: the data dir is untouched`);
    };

    // A planted owner key, with every checksum in backup.json made to match it: only the MAC tells.
    const manifestFile = join(dir, 'backup.json');
    const original = { manifest: readFileSync(manifestFile) };
    // Read as written, not parsed, so that only the fields planted below change.
    const manifest = JSON.parse(original.manifest.toString('utf8')) as BackupManifest;
    const keys = manifest.database.tables.find((table) => table.name === 'api_keys');
    if (!keys) throw new Error('the backup has no api_keys table');
    const keysFile = join(dir, keys.file);
    const keysBytes = readFileSync(keysFile);
    const rows = gunzipSync(keysBytes)
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Array<string | null>);
    const planted = generateApiKey();
    const row = [...rows[0]];
    const column = (name: string) => keys.columns.indexOf(name);
    row[column('id')] = newId();
    row[column('key_hash')] = hashApiKey(planted);
    row[column('prefix')] = displayPrefix(planted);
    row[column('name')] = 'planted';
    const tampered = gzipSync([...rows, row].map((values) => `${JSON.stringify(values)}\n`).join(''));
    writeFileSync(keysFile, tampered);
    keys.sha256 = sha256(tampered);
    keys.rows += 1;
    manifest.counts.rows += 1;
    writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
    await refused(
      ['--key-file', keyFile],
      /vpctl: backup\.json does not match backup\.mac under the backup key: the backup was altered, and is not restored\n$/,
      'a planted key row',
    );
    writeFileSync(keysFile, keysBytes);

    // One byte of backup.json changed.
    const flipped = Buffer.from(original.manifest);
    flipped[flipped.indexOf('"createdAt"') + 20] ^= 1;
    writeFileSync(manifestFile, flipped);
    await refused(
      ['--key-file', keyFile],
      /vpctl: backup\.json does not match backup\.mac under the backup key/,
      'one byte of backup.json changed',
    );
    writeFileSync(manifestFile, original.manifest);

    const otherKey = join(tempDir(t, 'vp-key-'), 'other-key');
    writeFileSync(otherKey, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
    await refused(
      ['--key-file', otherKey],
      /vpctl: the backup was made with another backup key \(id [0-9a-f]{16}; the key given is [0-9a-f]{16}\): give the key file it was made with\n$/,
      'another key',
    );
    await refused(
      [],
      /vpctl: no backup key at .*\/backup-key: give the key file the backup was made with \(--key-file FILE\); a backup is not restored without it\n$/,
      'no key',
    );
    const mac = readFileSync(join(dir, 'backup.mac'));
    rmSync(join(dir, 'backup.mac'));
    await refused(
      ['--key-file', keyFile],
      /vpctl: the backup has no backup\.mac: it cannot be authenticated, so it is not restored\n$/,
      'no MAC',
    );
    writeFileSync(join(dir, 'backup.mac'), mac);

    const { run, tables } = await restoreInto('--key-file', keyFile);
    t.equal(run.code, 0, `the backup as written restores: ${run.stderr}`);
    t.ok(tables > 0);
  },
);

t.test(
  'an appliance with a dataset indexed in place backs up (its images stay in their storage) and restores',
  async (t) => {
    const s3 = await startS3Server(t);
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
    t.teardown(() => client.destroy());
    const env = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', SIGNING_SECRET: SECRET };
    const world = await startWorld(t, env);
    const { server } = world;
    const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
      call<T>(server, method, path, { key: world.alice, body });
    await client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'set/data.yaml', Body: 'names: [cat]\n' }));
    for (const name of ['a', 'b']) {
      const image = await shapeImage({ format: 'jpeg' });
      await client.send(
        new PutObjectCommand({ Bucket: s3.bucket, Key: `set/images/train/${name}.jpg`, Body: image.bytes }),
      );
      await client.send(
        new PutObjectCommand({
          Bucket: s3.bucket,
          Key: `set/labels/train/${name}.txt`,
          Body: `0 ${image.bbox.join(' ')}\n`,
        }),
      );
    }
    const credentials = {
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      endpoint: s3.endpoint,
      region: 'us-east-1',
    };
    const integration = await api<{ id: string }>('POST', '/api/integrations/buckets', {
      provider: 's3',
      credentials,
      targets: [s3.bucket],
    });
    t.equal(integration.status, 201, JSON.stringify(integration.body));
    await createDataset(world, world.alice, { dataset: 'connected', name: 'Connected' });
    const indexed = await api<{ jobId: string }>('POST', '/api/datasets/alice/connected/ingest', {
      reference: { provider: 'cloud', integrationId: integration.body.id, target: s3.bucket, prefix: 'set/' },
    });
    t.equal((await waitForJob(t, world, world.alice, indexed.body.jobId)).status, 'completed', 'indexed in place');
    await createShapesDataset(t, world, world.alice, 'alice', 'shapes', { train: 2, val: 1 });

    const requests: Array<[string, string]> = [
      [world.alice, '/api/datasets/alice'],
      [world.alice, '/api/datasets/alice/connected'],
      [world.alice, '/api/datasets/alice/connected/images?includeImageUrls=true&limit=100&sort=name-asc'],
      [world.alice, '/api/datasets/alice/shapes/images?includeImageUrls=true&limit=100&sort=name-asc'],
    ];
    const before = await answers(server, requests);
    const keyFile = join(tempDir(t, 'vp-key-'), 'backup-key');
    const dir = join(tempDir(t, 'vp-backup-'), 'backup');
    const backup = await vpctl(
      { DATABASE_URL: server.databaseUrl, DATA_DIR: server.dataDir, SIGNING_SECRET: SECRET },
      'backup',
      dir,
      '--key-file',
      keyFile,
    );
    t.equal(backup.code, 0, backup.stderr);
    t.notMatch(backup.stderr, /incomplete/);
    const manifest = BackupManifest.parse(JSON.parse(readFileSync(join(dir, 'backup.json'), 'utf8')));
    t.match(manifest, { storage: { missing: [] }, counts: { images: 5 } });
    const listed = readFileSync(join(dir, 'blobs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { key: string }).key);
    t.equal(
      listed.filter((key) => /\/images\//.test(key)).length,
      3,
      "the uploaded dataset's images, not those read in place",
    );
    t.equal(listed.filter((key) => /\/thumbnails\//.test(key)).length, 5, 'every thumbnail (stored for both)');

    const target = await createEmptyDatabase();
    t.teardown(target.drop);
    const dataDir = tempDir(t, 'vp-restored-');
    const restore = await vpctl(
      { DATABASE_URL: target.url, DATA_DIR: dataDir, SIGNING_SECRET: SECRET },
      'restore',
      dir,
      '--key-file',
      keyFile,
    );
    t.equal(restore.code, 0, restore.stderr);
    const restored = await startTestServer(t, {
      databaseUrl: target.url,
      env: { DATA_DIR: dataDir, ...env, ...LIMITS },
    });
    const after = await answers(restored, requests);
    for (const [, path] of requests) t.same(after.bodies[path], before.bodies[path], `GET ${path} answers the same`);
    t.ok(
      [...after.urls.keys()].some((path) => path.startsWith('/reference-files/')),
      'images read in place are served by reference',
    );
    t.same(
      await bytesBehind(after.urls),
      await bytesBehind(before.urls),
      'the same bytes behind every URL, read in place from the bucket',
    );
  },
);
