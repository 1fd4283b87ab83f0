// Local storage: folders on a worker host, listed and read by a real vp-worker agent (process runtime) over its worker
// socket. The operator shares one folder (VP_WORKER_SHARED_FOLDERS); discover names it, connect checks it, browsing
// pages through it, listing walks it in key order with versions that change when a file is rewritten, reads return
// the exact bytes (many chunks, credit-driven) and stop at maxBytes. Every way out of the shared folder (.., absolute
// paths, symlinks, folders not shared) is refused; another workspace's host is not found; another replica reads through
// the one holding the host's socket; an offline host or one whose agent is too old answers 400 at once, a silent one
// after the timeout.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { FOLDER_CHUNK_BYTES, FOLDER_READ_WINDOW } from '@vp/protocol';
import t, { type Test } from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { LocalFolderProvider } from '../control-plane/src/integrations/providers/local.ts';
import {
  ProviderError,
  type ObjectEntry as Entry,
  type StoredObject,
} from '../control-plane/src/integrations/providers/provider.ts';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { expectError } from './helpers/expect.ts';
import { eventually } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';
import { waitForJob } from './helpers/archives.ts';
import { shapeImage } from './helpers/images.ts';
import { enrollHost, WorkerClient } from './helpers/worker-client.ts';

t.setTimeout(3 * 60_000);
const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1', RATE_LIMIT_MUTATION: '1000' });
const { server } = world;
const em = () => server.orm.em.fork() as EntityManager;
const dir = mkdtempSync(join(tmpdir(), 'vp-local-folders-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const shared = join(dir, 'shared');
const outside = join(dir, 'outside');
const big = randomBytes(3 * 1024 * 1024 + 123);
const files: Record<string, Buffer | string> = {
  'cover.jpg': 'bytes of cover',
  'train/1.jpg': 'bytes of one',
  'train/2.jpg': 'bytes of two',
  'train/3.jpg': 'bytes of three',
  'val/a b&c.jpg': 'odd name',
  'val/deep/x.jpg': 'deep',
  // "a.b" sorts before "a/x" as keys, though the folder "a" sorts before the file "a.b" as names.
  'a.b': 'dot',
  'a/x': 'in a',
  'big.bin': big,
};
for (const [key, bytes] of Object.entries(files)) {
  mkdirSync(join(shared, key, '..'), { recursive: true });
  writeFileSync(join(shared, key), bytes);
}
for (let i = 0; i < 1005; i++) {
  mkdirSync(join(shared, 'many'), { recursive: true });
  writeFileSync(join(shared, 'many', `f${String(i).padStart(4, '0')}.jpg`), String(i));
}
mkdirSync(outside);
writeFileSync(join(outside, 'secret.jpg'), 'secret');
mkdirSync(join(dir, 'not-shared'));
writeFileSync(join(dir, 'not-shared', 'private.jpg'), 'private');
symlinkSync(join(outside, 'secret.jpg'), join(shared, 'escape.jpg'));
symlinkSync(outside, join(shared, 'escape-dir'));
symlinkSync(join(shared, 'cover.jpg'), join(shared, 'inner.jpg'));

const { enrollmentToken } = await server.services().hosts.connect('files-host', 'alice');
const config = join(dir, 'agent.json');
await enrollAgent(t, server.url, enrollmentToken, config);
const agent = runAgent(t, config, {
  VP_WORKER_RUNTIME: 'process',
  VP_WORKER_WORK_DIR: join(dir, 'work'),
  VP_WORKER_SHARED_FOLDERS: `${shared}, /nonexistent/folder`,
});
const [{ id: hostId }] = await eventually(
  async () => {
    const rows = await query<{ id: string }>(
      em(),
      `select id from hosts where name = 'files-host' and state = 'connected'`,
    );
    return rows.length > 0 && rows;
  },
  'the agent connected',
  60_000,
);

const credentials = { keyId: hostId };
const discover = (key: string, keyId = hostId) =>
  call<{ targets: string[] }>(server, 'POST', '/api/integrations/buckets/discover', {
    key,
    body: { provider: 'local', credentials: { keyId } },
  });
const connect = (targets: string[], key = world.alice) =>
  call<{ id: string; provider: string; credentialIdentity: string; targets: string[] }>(
    server,
    'POST',
    '/api/integrations/buckets',
    { key, body: { provider: 'local', credentials, targets } },
  );
const browse = (id: string, query: Record<string, string>, key = world.alice) =>
  call<{ entries: Entry[]; cursor?: string }>(
    server,
    'GET',
    `/api/integrations/buckets/${id}/objects?${new URLSearchParams(query).toString()}`,
    { key },
  );
const provider = new LocalFolderProvider(server.hostFolders);

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function listAll(target: string, prefix: string): Promise<{ objects: StoredObject[]; pages: number }> {
  const objects: StoredObject[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await provider.list(credentials, { target, prefix, cursor });
    objects.push(...page.objects);
    cursor = page.cursor;
    pages += 1;
  } while (cursor);
  return { objects, pages };
}

async function refused(
  t: Test,
  promise: Promise<unknown>,
  kind: ProviderError['kind'],
  message: RegExp,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof ProviderError, `a ProviderError (${(error as Error | undefined)?.message})`);
  t.match(error, { kind, message }, `${kind}: ${message}`);
}

let integrationId = '';

t.test('discover names the shared folders; another workspace does not see the host', async (t) => {
  const found = await discover(world.alice);
  t.equal(found.status, 200, JSON.stringify(found.body));
  t.same(found.body, { targets: [shared, '/nonexistent/folder'] }, "the agent's shared folders, as configured");
  expectError(t, await discover(world.bobby), 404, `credentials.keyId: worker host ${hostId} not found`);
  expectError(t, await discover(world.alice, 'a'.repeat(24)), 404, /not found/);
  expectError(t, await discover(world.alice, '../etc'), 400, /keyId/);
});

t.test('connect checks each folder: shared ones and folders inside them only', async (t) => {
  const connected = await connect([shared]);
  t.equal(connected.status, 201, JSON.stringify(connected.body));
  t.match(connected.body, { provider: 'local', credentialIdentity: hostId, targets: [shared] });
  integrationId = connected.body.id;
  t.equal((await connect([join(shared, 'train')])).status, 201, 'a folder inside a shared one');

  expectError(t, await connect([join(dir, 'not-shared')]), 400, /is not a folder this host shares/);
  expectError(t, await connect([`${shared}/../not-shared`]), 400, /is not a folder this host shares/);
  expectError(t, await connect([join(shared, 'escape-dir')]), 400, /is not a folder this host shares/);
  expectError(t, await connect(['/nonexistent/folder']), 400, /no such file or folder/);
  expectError(t, await connect(['relative/path']), 400, /absolute path/);
  expectError(t, await connect([shared], world.bobby), 404, /not found/);
  const rows = await query(em(), `select 1 from storage_integrations where provider = 'local'`);
  t.equal(rows.length, 2, 'the refused ones saved nothing');
});

t.test('one folder spelled another way (./, //, a trailing /) is the same target', async (t) => {
  const train = join(shared, 'train');
  const connected = await connect([`${shared}/./train`, `${shared}//train/`, train]);
  t.equal(connected.status, 201, JSON.stringify(connected.body));
  t.same(connected.body.targets, [train], 'one target, in one spelling');
  for (const spelled of [`${shared}/./train`, `${shared}//train/`]) {
    const page = await browse(connected.body.id, { target: spelled });
    t.equal(page.status, 200, `${spelled}: ${JSON.stringify(page.body)}`);
    t.same(
      page.body.entries.map((entry) => entry.name),
      ['1.jpg', '2.jpg', '3.jpg'],
    );
  }
});

t.test('browse pages through folders and files in key order; symlinks out of the folder are left out', async (t) => {
  const seen: Entry[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await browse(integrationId, { target: shared, limit: '2', ...(cursor ? { cursor } : {}) });
    t.equal(page.status, 200, JSON.stringify(page.body));
    t.ok(page.body.entries.length <= 2, 'at most the limit');
    seen.push(...page.body.entries);
    cursor = page.body.cursor;
    pages += 1;
  } while (cursor && pages < 20);
  t.same(
    seen.map((entry) => entry.key),
    ['a.b', 'a/', 'big.bin', 'cover.jpg', 'inner.jpg', 'many/', 'train/', 'val/'],
    'escape.jpg and escape-dir (symlinks leading out) are not listed; inner.jpg (a symlink inside) is',
  );
  t.match(
    seen.find((entry) => entry.key === 'inner.jpg'),
    { kind: 'file', name: 'inner.jpg', size: 'bytes of cover'.length },
  );
  t.match(
    seen.find((entry) => entry.key === 'train/'),
    { kind: 'folder', name: 'train' },
  );
  const val = await browse(integrationId, { target: shared, prefix: 'val/' });
  t.same(val.body, {
    entries: [
      { kind: 'file', name: 'a b&c.jpg', key: 'val/a b&c.jpg', size: 8, updatedAt: val.body.entries[0]!.updatedAt },
      { kind: 'folder', name: 'deep', key: 'val/deep/' },
    ],
  });

  for (const prefix of ['../', 'train/../../', '/etc/', 'escape-dir/', '../not-shared/']) {
    expectError(
      t,
      await browse(integrationId, { target: shared, prefix }),
      400,
      /must be a path inside the folder|leads outside the folder/,
    );
  }
  expectError(
    t,
    await browse(integrationId, { target: join(dir, 'not-shared') }),
    404,
    /is not a bucket of storage integration/,
  );
  expectError(t, await browse(integrationId, { target: shared }, world.bobby), 404);
});

t.test('list walks every file in key order, in pages, with a version that changes with the file', async (t) => {
  const { objects, pages } = await listAll(shared, '');
  t.equal(pages, 2, 'two pages of at most 1000');
  const keys = objects.map((object) => object.key);
  t.same(keys, [...keys].sort(), 'in key order');
  t.same(
    keys.filter((key) => !key.startsWith('many/')),
    [
      'a.b',
      'a/x',
      'big.bin',
      'cover.jpg',
      'inner.jpg',
      'train/1.jpg',
      'train/2.jpg',
      'train/3.jpg',
      'val/a b&c.jpg',
      'val/deep/x.jpg',
    ],
  );
  t.equal(keys.filter((key) => key.startsWith('many/')).length, 1005, 'every file of the large folder');
  t.equal(new Set(keys).size, keys.length, 'no key twice across pages');
  t.match(
    objects.find((object) => object.key === 'big.bin'),
    { size: big.length, version: /^\d+-\d+$/ },
  );

  t.same(
    (await listAll(shared, 'val/')).objects.map((object) => object.key),
    ['val/a b&c.jpg', 'val/deep/x.jpg'],
    'beneath a folder prefix',
  );
  t.same(
    (await listAll(shared, 'train/2')).objects.map((object) => object.key),
    ['train/2.jpg'],
    'beneath a partial prefix',
  );
  t.same((await listAll(shared, 'nothing/')).objects, [], 'a prefix with nothing beneath it is empty');
  t.same(
    (await listAll(join(shared, 'train'), '')).objects.map((object) => object.key),
    ['1.jpg', '2.jpg', '3.jpg'],
    'keys relative to the root',
  );

  const before = (await listAll(shared, 'train/')).objects.find((object) => object.key === 'train/1.jpg')!;
  writeFileSync(join(shared, 'train/1.jpg'), 'rewritten bytes of one');
  utimesSync(join(shared, 'train/1.jpg'), new Date(), new Date(Date.now() + 5000));
  const after = (await listAll(shared, 'train/')).objects.find((object) => object.key === 'train/1.jpg')!;
  t.not(after.version, before.version, 'rewritten: another version');
  t.equal(after.size, 'rewritten bytes of one'.length);
  const atVersion = (ifVersion: string, key = 'train/1.jpg') =>
    provider.read(credentials, { target: shared, key, maxBytes: 1000, ifVersion });
  t.equal(
    (await bytesOf(await atVersion(after.version))).toString(),
    'rewritten bytes of one',
    'read at the version listed',
  );
  await refused(t, atVersion(before.version), 'changed', /it changed since it was listed/);
  await refused(t, atVersion(after.version, 'train/1.jp'), 'missing', /no such file/);

  await refused(
    t,
    provider.list(credentials, { target: shared, prefix: '../' }),
    'rejected',
    /must be a path inside the folder/,
  );
  await refused(
    t,
    provider.list(credentials, { target: join(dir, 'not-shared'), prefix: '' }),
    'rejected',
    /is not a folder this host shares/,
  );
});

t.test('read streams the exact bytes, stops at maxBytes, and refuses every way out', async (t) => {
  t.equal(
    (
      await bytesOf(await provider.read(credentials, { target: shared, key: 'train/2.jpg', maxBytes: 1000 }))
    ).toString(),
    'bytes of two',
  );
  t.ok(
    (await bytesOf(await provider.read(credentials, { target: shared, key: 'big.bin', maxBytes: big.length }))).equals(
      big,
    ),
    'a file of many chunks, byte for byte',
  );
  t.equal(
    (await bytesOf(await provider.read(credentials, { target: shared, key: 'inner.jpg', maxBytes: 1000 }))).toString(),
    'bytes of cover',
    'a symlink inside',
  );
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'big.bin', maxBytes: big.length - 1 }),
    'failing',
    /larger than/,
  );

  for (const key of [
    '../outside/secret.jpg',
    'train/../../outside/secret.jpg',
    join(outside, 'secret.jpg'),
    '/etc/passwd',
    './cover.jpg',
    'train//1.jpg',
  ]) {
    await refused(
      t,
      provider.read(credentials, { target: shared, key, maxBytes: 1000 }),
      'rejected',
      /must be a path inside the folder/,
    );
  }
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'escape.jpg', maxBytes: 1000 }),
    'rejected',
    /leads outside the folder/,
  );
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'escape-dir/secret.jpg', maxBytes: 1000 }),
    'rejected',
    /leads outside the folder/,
  );
  await refused(
    t,
    provider.read(credentials, { target: join(dir, 'not-shared'), key: 'private.jpg', maxBytes: 1000 }),
    'rejected',
    /is not a folder this host shares/,
  );
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'missing.jpg', maxBytes: 1000 }),
    'missing',
    /no such file/,
  );
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'train', maxBytes: 1000 }),
    'missing',
    /is not a file/,
  );

  const aborted = new AbortController();
  const reading = provider.read(credentials, {
    target: shared,
    key: 'big.bin',
    maxBytes: big.length,
    signal: aborted.signal,
  });
  aborted.abort(new Error('the caller gave up'));
  await t.rejects(reading, /the caller gave up/, 'an aborted read rejects with the reason');
  // A reader that stops early cancels the read: the agent keeps answering.
  const stream = await provider.read(credentials, { target: shared, key: 'big.bin', maxBytes: big.length });
  stream.destroy();
  t.equal(
    (await bytesOf(await provider.read(credentials, { target: shared, key: 'cover.jpg', maxBytes: 1000 }))).toString(),
    'bytes of cover',
    'still answering',
  );
});

t.test(
  'an ingest by reference indexes a YOLO layout in a shared folder in place, read through the agent',
  async (t) => {
    const layout = join(shared, 'yolo');
    const images = await Promise.all([0, 1].map(() => shapeImage({ format: 'jpeg' })));
    mkdirSync(join(layout, 'images', 'train'), { recursive: true });
    mkdirSync(join(layout, 'labels', 'train'), { recursive: true });
    writeFileSync(join(layout, 'data.yaml'), 'names: [box]\n');
    images.forEach((image, i) => {
      writeFileSync(join(layout, 'images', 'train', `${i}.jpg`), image.bytes);
      writeFileSync(join(layout, 'labels', 'train', `${i}.txt`), `0 ${image.bbox.join(' ')}\n`);
    });
    await createDataset(world, world.alice, { dataset: 'on-host', name: 'On host' });
    const ingest = (body: unknown, key = world.alice, path = 'alice/on-host') =>
      call<{ jobId: string }>(server, 'POST', `/api/datasets/${path}/ingest`, { key, body: { reference: body } });
    expectError(
      t,
      await ingest({ provider: 'local', keyId: hostId, root: join(dir, 'not-shared') }),
      400,
      /not-shared/,
    );
    await createDataset(world, world.bobby, { dataset: 'theirs', name: 'Theirs' });
    expectError(
      t,
      await ingest({ provider: 'local', keyId: hostId, root: shared }, world.bobby, 'bobby/theirs'),
      404,
      `reference.keyId: worker host ${hostId} not found`,
    );

    const started = await ingest({ provider: 'local', keyId: hostId, root: shared, prefix: 'yolo' });
    t.equal(started.status, 201);
    const job = await waitForJob(t, world, world.alice, started.body.jobId);
    t.equal(job.status, 'completed', job.error ?? '');
    t.match(job.result, { format: 'yolo', imagesAdded: 2, labelsAdded: 2 });
    const { body } = await call<{ dataset: Record<string, unknown> }>(server, 'GET', '/api/datasets/alice/on-host', {
      key: world.alice,
    });
    t.match(body.dataset, {
      imageCount: 2,
      classNames: ['box'],
      integrationProvider: 'on-premise',
      integrationStatus: 'online',
      integrationWritable: false,
      source: { provider: 'local', keyId: hostId },
    });
    const listed = await call<{ images: Array<{ name: string; imageUrl: string }> }>(
      server,
      'GET',
      '/api/datasets/alice/on-host/images?includeImageUrls=true&sort=name-asc',
      { key: world.alice },
    );
    for (const [i, image] of listed.body.images.entries()) {
      const served = await fetch(image.imageUrl);
      t.equal(served.status, 200);
      t.ok(
        Buffer.from(await served.arrayBuffer()).equals(images[i].bytes),
        `${image.name}: the host's file, byte for byte`,
      );
    }
    const again = await ingest({ provider: 'local', keyId: hostId, root: `${shared}/./`, prefix: 'yolo' });
    t.equal(
      again.status,
      201,
      `a re-sync names the folder another way: the same reference (${JSON.stringify(again.body)})`,
    );
    t.equal((await waitForJob(t, world, world.alice, again.body.jobId)).status, 'completed');
  },
);

t.test('another replica serves the host through the one holding its socket', async (t) => {
  // Replicas share the database and the signing secret (which opens the saved credentials).
  const secret = readFileSync(join(server.dataDir, 'signing-secret'), 'utf8').trim();
  const other = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { SIGNING_SECRET: secret, RATE_LIMIT_DEFAULT: '1000000', RATE_LIMIT_MUTATION: '1000' },
  });
  const found = await call<{ targets: string[] }>(other, 'POST', '/api/integrations/buckets/discover', {
    key: world.alice,
    body: { provider: 'local', credentials },
  });
  t.same(found.body, { targets: [shared, '/nonexistent/folder'] }, 'discover');
  const page = await call<{ entries: Entry[]; cursor?: string }>(
    other,
    'GET',
    `/api/integrations/buckets/${integrationId}/objects?${new URLSearchParams({ target: shared, limit: '3' }).toString()}`,
    { key: world.alice },
  );
  t.same(
    page.body.entries?.map((entry) => entry.key),
    ['a.b', 'a/', 'big.bin'],
    'browse',
  );
  const relayed = new LocalFolderProvider(other.hostFolders);
  const listed = await relayed.list(credentials, { target: shared, prefix: '' });
  t.same(
    listed.objects,
    (await provider.list(credentials, { target: shared, prefix: '' })).objects,
    'list, as the replica holding the socket lists',
  );
  t.ok(
    (await bytesOf(await relayed.read(credentials, { target: shared, key: 'big.bin', maxBytes: big.length }))).equals(
      big,
    ),
    'a read of many chunks, byte for byte',
  );
  await refused(
    t,
    relayed.read(credentials, { target: shared, key: '../outside/secret.jpg', maxBytes: 1000 }),
    'rejected',
    /must be a path inside the folder/,
  );
  await refused(
    t,
    relayed.read(credentials, { target: shared, key: 'big.bin', maxBytes: 1000 }),
    'failing',
    /larger than/,
  );
  // The last cancel may still be on its way.
  await eventually(
    async () => (await query(em(), 'select 1 from host_folder_relay')).length === 0,
    'nothing left in the relay',
  );
  t.pass('nothing left in the relay');
});

t.test(
  'a read grants the host credit only as it is consumed; a host sending past maxBytes fails the read',
  async (t) => {
    const { hostId: scripted, workerKey } = await enrollHost(server, 'scripted-files', 'alice');
    const { client } = await WorkerClient.welcomed(server, workerKey);
    t.teardown(() => client.ws.close());
    client.beat();
    const total = 40;
    const chunk = randomBytes(FOLDER_CHUNK_BYTES);
    const opening = provider.read(
      { keyId: scripted },
      { target: '/data', key: 'a.bin', maxBytes: total * FOLDER_CHUNK_BYTES },
    );
    const request = await client.nextOf('folder.request');
    t.match(request.op, { kind: 'read', root: '/data', key: 'a.bin' });
    const { requestId } = request;
    client.send({ type: 'folder.result', requestId, result: { size: total * FOLDER_CHUNK_BYTES } });
    // The host as the agent behaves: a chunk only against credit, the window to start with.
    let credit = FOLDER_READ_WINDOW;
    let sent = 0;
    const pump = () => {
      for (; credit > 0 && sent < total; credit--, sent++)
        client.send({ type: 'folder.chunk', requestId, data: chunk.toString('base64') });
      if (sent === total) client.send({ type: 'folder.end', requestId });
    };
    void (async () => {
      while (sent < total) {
        const granted = await client.nextOf('folder.credit', 30_000).catch(() => undefined);
        if (!granted) return;
        credit += granted.chunks;
        pump();
      }
    })();
    pump();
    const stream = await opening;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    t.ok(
      sent <= 3 * FOLDER_READ_WINDOW,
      `while nothing reads, the host may send only a few chunks (sent ${sent} of ${total})`,
    );
    const bytes = await bytesOf(stream);
    t.equal(bytes.length, total * FOLDER_CHUNK_BYTES, 'once read, every chunk came');
    t.ok(bytes.subarray(FOLDER_CHUNK_BYTES * 7, FOLDER_CHUNK_BYTES * 8).equals(chunk), 'the bytes the host sent');

    const capped = await (async () => {
      const opened = provider.read({ keyId: scripted }, { target: '/data', key: 'b.bin', maxBytes: 100 });
      const { requestId } = await client.nextOf('folder.request');
      client.send({ type: 'folder.result', requestId, result: { size: 10 } });
      const stream = await opened;
      client.send({ type: 'folder.chunk', requestId, data: randomBytes(200).toString('base64') });
      return bytesOf(stream).then(
        () => undefined,
        (error: unknown) => error,
      );
    })();
    t.match(
      capped,
      { kind: 'failing', message: /larger than 100 bytes/ },
      'a host that sends more than it may fails the read',
    );
    t.match(await client.nextOf('folder.cancel'), { type: 'folder.cancel' }, 'and the host is told to stop');
  },
);

t.test('an agent too old for shared folders answers 400 at once', async (t) => {
  const { hostId: oldHost, workerKey } = await enrollHost(server, 'old-host', 'alice');
  const { client } = await WorkerClient.welcomed(server, workerKey, { protocolVersion: 3 });
  t.teardown(() => client.ws.close());
  client.beat();
  expectError(t, await discover(world.alice, oldHost), 400, /too old to share folders; upgrade it/);
});

t.test('a host that does not answer: 400 after the timeout, no hang', async (t) => {
  const { hostId: silentHost, workerKey } = await enrollHost(server, 'silent-host', 'alice');
  const { client } = await WorkerClient.welcomed(server, workerKey);
  t.teardown(() => client.ws.close());
  client.beat();
  const started = Date.now();
  const answer = discover(world.alice, silentHost);
  t.match(await client.nextOf('folder.request'), { op: { kind: 'roots' } }, 'the request reached the host');
  expectError(t, await answer, 400, `worker host ${silentHost} did not answer within 30 s`);
  t.ok(Date.now() - started < 40_000, 'in about the timeout');
});

t.test('an offline host answers 400 at once, saying so', async (t) => {
  agent.child.kill('SIGTERM');
  await agent.exited;
  await eventually(
    async () => (await query(em(), `select 1 from hosts where id = ? and state = 'disconnected'`, [hostId])).length > 0,
    'the host disconnected',
  );
  const started = Date.now();
  expectError(t, await discover(world.alice), 400, /is offline/);
  expectError(t, await browse(integrationId, { target: shared }), 400, /is offline/);
  await refused(
    t,
    provider.read(credentials, { target: shared, key: 'cover.jpg', maxBytes: 1000 }),
    'unreachable',
    /is offline/,
  );
  t.ok(Date.now() - started < 5000, 'without waiting for a timeout');
});
