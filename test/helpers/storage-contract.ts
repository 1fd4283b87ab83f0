import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable, type Readable } from 'node:stream';
import type { Test } from 'tap';
import { storageProviders } from '../../control-plane/src/integrations/providers/index.ts';
import { ProviderError, type ProviderName } from '../../control-plane/src/integrations/providers/provider.ts';
import { OutboundPolicy } from '../../control-plane/src/net/outbound-policy.ts';
import { createLogger } from '../../control-plane/src/server.ts';
import { expectError } from './expect.ts';
import { call } from './server.ts';
import { startWorld } from './world.ts';

/** A storage service under test, with what the contract needs to fill it. */
export interface ContractSubject {
  provider: ProviderName;
  /** The bucket (container) the contract makes and fills. */
  bucket: string;
  /** Credentials that can list and read every bucket. */
  credentials: Record<string, unknown>;
  /** The same with a wrong secret, and the error the API answers them with. */
  wrongCredentials: Record<string, unknown>;
  wrongCredentialsError: RegExp;
  /** The credentials, sent to another address of the service. */
  atEndpoint(endpoint: string): Record<string, unknown>;
  /** What the integration names as its credentialIdentity. */
  identity: string;
  /** Strings that must never reach an answer or the log. */
  secrets: string[];
  createBucket(name: string): Promise<void>;
  put(bucket: string, key: string, bytes: Buffer): Promise<void>;
}

interface Entry {
  kind: 'folder' | 'file';
  name: string;
  key: string;
  size?: number;
  updatedAt?: string;
}

/** A folder whose name a query must carry exactly: a space (form encoding's `+`), a `+` and a non-ASCII letter. */
const SPACED = 'my photos+ü/';
const KEYS = [
  'cover.jpg',
  `${SPACED}a b+ü.jpg`,
  `${SPACED}sub dir/c.jpg`,
  'train/1.jpg',
  'train/2.jpg',
  'train/3.jpg',
  'val/a b&c.jpg',
  'val/deep/x.jpg',
];
const bytesOf = (key: string) => Buffer.from(`bytes of ${key}`);

/** A query component as SigV4 signs it (RFC 3986): unreserved characters as themselves, every other byte %XX. */
const CANONICAL = /^(?:[A-Za-z0-9\-._~]|%[0-9A-F]{2})*$/;

/** A proxy on loopback in front of the service at `target` that records each path and query as the service receives them. */
export async function recordingProxy(
  t: Test,
  target: URL,
): Promise<{ endpoint: string; paths: string[]; queries: string[] }> {
  const paths: string[] = [];
  const queries: string[] = [];
  const proxy = createServer((request, response) => {
    const path = request.url ?? '/';
    paths.push(path.includes('?') ? path.slice(0, path.indexOf('?')) : path);
    queries.push(path.includes('?') ? path.slice(path.indexOf('?') + 1) : '');
    const forwarded = httpRequest(
      { host: target.hostname, port: target.port, method: request.method, path, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => proxy.close());
  return {
    endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${target.pathname.replace(/\/$/, '')}`,
    paths,
    queries,
  };
}

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * What every storage provider promises, proven against its real server on loopback: discover, connect, list and
 * browse through the API; list and read (what ingest by reference uses) through the provider; wrong credentials a
 * clear 400; credentials never answered or logged.
 */
export async function storageContract(t: Test, subject: ContractSubject): Promise<void> {
  const { bucket } = subject;
  await subject.createBucket(bucket);
  for (const key of KEYS) await subject.put(bucket, key, bytesOf(key));
  const lines: string[] = [];
  const log = createLogger(
    { logLevel: 'trace' },
    new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }),
  );
  // The test's server is on loopback: the operator allows it, as an appliance allows storage on its premises.
  const world = await startWorld(
    t,
    { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', RATE_LIMIT_MUTATION: '1000000' },
    { log },
  );
  const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
    call<T>(world.server, method, path, { key: world.alice, body });
  const { provider } = storageProviders(new OutboundPolicy(['127.0.0.1/32']))[subject.provider];
  const answers: string[] = [];

  await t.test('discover offers the bucket', async (t) => {
    const found = await api<{ targets: string[] }>('POST', '/api/integrations/buckets/discover', {
      provider: subject.provider,
      credentials: subject.credentials,
    });
    t.equal(found.status, 200, JSON.stringify(found.body));
    t.ok(found.body.targets.includes(bucket), `${bucket} among ${found.body.targets.join(', ')}`);
    t.strictSame(found.body.targets, [...found.body.targets].sort(), 'sorted');
  });

  await t.test('wrong credentials are a clear 400, and nothing is saved', async (t) => {
    const wrong = await api('POST', '/api/integrations/buckets/discover', {
      provider: subject.provider,
      credentials: subject.wrongCredentials,
    });
    expectError(t, wrong, 400, subject.wrongCredentialsError);
    const connect = await api('POST', '/api/integrations/buckets', {
      provider: subject.provider,
      credentials: subject.wrongCredentials,
      targets: [bucket],
    });
    expectError(t, connect, 400, subject.wrongCredentialsError);
    const missing = await api('POST', '/api/integrations/buckets', {
      provider: subject.provider,
      credentials: subject.credentials,
      targets: ['no-such-bucket'],
    });
    expectError(t, missing, 400, /no such (bucket|container)/);
    answers.push(JSON.stringify([wrong.body, connect.body, missing.body]));
    t.strictSame((await api('GET', '/api/integrations/buckets')).body, { integrations: [] });
  });

  await t.test("the service's server error is a 502", async (t) => {
    const broken = createServer((_request, response) => response.writeHead(503).end('down for maintenance'));
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    t.teardown(() => broken.close());
    const failing = await api('POST', '/api/integrations/buckets/discover', {
      provider: subject.provider,
      credentials: subject.atEndpoint(`http://127.0.0.1:${(broken.address() as AddressInfo).port}`),
    });
    expectError(t, failing, 502, /^\w[\w ]* at 127\.0\.0\.1:\d+ could not list the (buckets|containers): HTTP 503$/);
  });

  await t.test('an address the operator did not allow is refused before any request', async (t) => {
    const closed = storageProviders(new OutboundPolicy())[subject.provider].provider;
    const refused = await closed.discover(subject.credentials).then(
      () => undefined,
      (error: unknown) => error,
    );
    t.ok(refused instanceof ProviderError);
    t.match(refused, {
      kind: 'refused',
      message:
        /^credentials\.[\w.]+: 127\.0\.0\.1 is not a public address \(loopback\); an operator allows on-premise storage with OUTBOUND_ALLOWED_NETWORKS$/,
    });
  });

  await t.test('connect, list the integrations, browse folders page by page', async (t) => {
    const connected = await api<{ id: string }>('POST', '/api/integrations/buckets', {
      provider: subject.provider,
      credentials: subject.credentials,
      targets: [bucket],
    });
    t.equal(connected.status, 201, JSON.stringify(connected.body));
    t.match(connected.body, {
      provider: subject.provider,
      credentialIdentity: subject.identity,
      targets: [bucket],
      processing: true,
    });
    const listed = await api<{ integrations: unknown[] }>('GET', '/api/integrations/buckets');
    t.strictSame(listed.body.integrations, [connected.body]);
    const objects = (query: string) =>
      api<{ entries: Entry[]; cursor?: string }>(
        'GET',
        `/api/integrations/buckets/${connected.body.id}/objects?target=${bucket}&${query}`,
      );
    const top = await objects('');
    t.strictSame(
      top.body.entries.map(({ kind, name, key }) => ({ kind, name, key })),
      [
        { kind: 'folder', name: 'my photos+ü', key: SPACED },
        { kind: 'folder', name: 'train', key: 'train/' },
        { kind: 'folder', name: 'val', key: 'val/' },
        { kind: 'file', name: 'cover.jpg', key: 'cover.jpg' },
      ],
    );
    t.equal(top.body.entries[3].size, bytesOf('cover.jpg').length);
    t.ok(!Number.isNaN(Date.parse(top.body.entries[3].updatedAt ?? '')), 'files carry their time');
    t.notOk('cursor' in top.body, 'no cursor on the last page');
    const val = await objects('prefix=val/');
    t.strictSame(
      val.body.entries.map(({ kind, name, key }) => ({ kind, name, key })),
      [
        { kind: 'folder', name: 'deep', key: 'val/deep/' },
        { kind: 'file', name: 'a b&c.jpg', key: 'val/a b&c.jpg' },
      ],
      'names with spaces and XML entities',
    );
    const first = await objects('prefix=train/&limit=2');
    t.strictSame(
      first.body.entries.map((entry) => entry.key),
      ['train/1.jpg', 'train/2.jpg'],
    );
    t.type(first.body.cursor, 'string', 'a cursor for the next page');
    const second = await objects(`prefix=train/&limit=2&cursor=${encodeURIComponent(first.body.cursor!)}`);
    t.strictSame(
      second.body.entries.map((entry) => entry.key),
      ['train/3.jpg'],
    );
    t.notOk('cursor' in second.body);
    answers.push(JSON.stringify([connected.body, listed.body, top.body]));
    await api('DELETE', `/api/integrations/buckets/${connected.body.id}`);
  });

  await t.test('a prefix and keys with spaces, + and non-ASCII: browsed page by page, listed and read', async (t) => {
    // Through a proxy that records what the service receives: a query must be sent as it is signed, for a strict
    // service (AWS) reads a `+` as itself where SigV4 signed a space.
    const proxy = await recordingProxy(t, new URL(String(subject.credentials.endpoint)));
    const credentials = subject.atEndpoint(proxy.endpoint);
    const connected = await api<{ id: string }>('POST', '/api/integrations/buckets', {
      provider: subject.provider,
      credentials,
      targets: [bucket],
    });
    t.equal(connected.status, 201, JSON.stringify(connected.body));
    const entries: Entry[] = [];
    let cursor: string | undefined;
    do {
      const query = `target=${bucket}&prefix=${encodeURIComponent(SPACED)}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await api<{ entries: Entry[]; cursor?: string }>(
        'GET',
        `/api/integrations/buckets/${connected.body.id}/objects?${query}`,
      );
      t.equal(page.status, 200, JSON.stringify(page.body));
      entries.push(...page.body.entries);
      cursor = page.body.cursor;
    } while (cursor && entries.length < 10);
    t.strictSame(
      entries.map(({ kind, name, key }) => ({ kind, name, key })).sort((a, b) => (a.key < b.key ? -1 : 1)),
      [
        { kind: 'file', name: 'a b+ü.jpg', key: `${SPACED}a b+ü.jpg` },
        { kind: 'folder', name: 'sub dir', key: `${SPACED}sub dir/` },
      ],
    );
    await api('DELETE', `/api/integrations/buckets/${connected.body.id}`);

    const first = await provider.list(credentials, { target: bucket, prefix: SPACED, limit: 1 });
    const second = await provider.list(credentials, { target: bucket, prefix: SPACED, limit: 1, cursor: first.cursor });
    t.strictSame(
      [...first.objects, ...second.objects].map((object) => object.key),
      [`${SPACED}a b+ü.jpg`, `${SPACED}sub dir/c.jpg`],
      'listed a page at a time',
    );
    t.notOk(second.cursor, 'and no more');
    for (const object of [...first.objects, ...second.objects]) {
      t.strictSame(
        await drain(
          await provider.read(credentials, {
            target: bucket,
            key: object.key,
            maxBytes: 1024,
            ifVersion: object.version,
          }),
        ),
        bytesOf(object.key),
        `read ${object.key}`,
      );
    }
    const components = proxy.queries.flatMap((query) => (query ? query.split(/[&=]/) : []));
    t.ok(
      components.some((component) => decodeURIComponent(component) === SPACED),
      'the prefix was sent',
    );
    t.strictSame(
      components.filter((component) => !CANONICAL.test(component)),
      [],
      'every query sent RFC 3986-encoded, as SigV4 signs it',
    );
  });

  await t.test('list: every object at any depth, page by page, its version changing when rewritten', async (t) => {
    const listAll = async (prefix: string) => {
      const pages = [];
      let cursor: string | undefined;
      do {
        const page = await provider.list(subject.credentials, { target: bucket, prefix, cursor, limit: 2 });
        pages.push(page.objects);
        cursor = page.cursor;
      } while (cursor && pages.length < 10);
      return pages;
    };
    const pages = await listAll('');
    t.ok(pages.length >= 3, `${pages.length} pages of at most 2`);
    t.ok(pages.every((page) => page.length <= 2));
    const objects = pages.flat();
    t.strictSame(
      objects.map((object) => object.key),
      [...KEYS].sort(),
    );
    t.strictSame(
      objects.map((object) => object.size),
      [...KEYS].sort().map((key) => bytesOf(key).length),
    );
    t.ok(
      objects.every((object) => object.version && !Number.isNaN(Date.parse(object.updatedAt ?? ''))),
      'each has a version and a time',
    );
    t.strictSame(
      (await listAll('val/')).flat().map((object) => object.key),
      ['val/a b&c.jpg', 'val/deep/x.jpg'],
      'beneath a prefix, at any depth',
    );

    await subject.put(bucket, 'train/2.jpg', Buffer.from('other bytes'));
    const after = (await listAll('train/')).flat();
    const before = objects.filter((object) => object.key.startsWith('train/'));
    t.not(after[1].version, before[1].version, 'a rewritten object has a new version');
    t.strictSame(
      [after[0].version, after[2].version],
      [before[0].version, before[2].version],
      'the others keep theirs',
    );
  });

  await t.test('read: the bytes, streamed; past maxBytes a ProviderError', async (t) => {
    const key = 'val/a b&c.jpg';
    t.strictSame(
      await drain(await provider.read(subject.credentials, { target: bucket, key, maxBytes: 1024 })),
      bytesOf(key),
    );
    const failure = (request: { credentials: Record<string, unknown>; key: string; maxBytes: number }) =>
      provider
        .read(request.credentials, { target: bucket, ...request })
        .then(drain)
        .then(
          () => undefined,
          (error: unknown) => error,
        );
    const tooLarge = await failure({ credentials: subject.credentials, key, maxBytes: 4 });
    t.ok(tooLarge instanceof ProviderError, 'larger than maxBytes: a ProviderError');
    t.match(tooLarge, {
      kind: 'failing',
      message: /could not read val\/a b&c\.jpg of \w+ [\w-]+: larger than 4 bytes$/,
    });
    t.match(
      await failure({ credentials: subject.credentials, key: 'no/such.jpg', maxBytes: 1024 }),
      { kind: 'missing', message: /no such object \(HTTP 404\)$/ },
      'a missing object',
    );
    t.match(
      await failure({ credentials: subject.wrongCredentials, key, maxBytes: 1024 }),
      { kind: 'rejected', message: /refused these credentials to read|could not get an access token/ },
      'wrong credentials',
    );
  });

  await t.test(
    'read at a version: the bytes while the object is at it; once rewritten a ProviderError changed',
    async (t) => {
      const key = 'train/1.jpg';
      const listed = async () => (await provider.list(subject.credentials, { target: bucket, prefix: key })).objects[0];
      const indexed = await listed();
      t.equal(indexed.key, key);
      const read = (ifVersion: string) =>
        provider.read(subject.credentials, { target: bucket, key, maxBytes: 1024, ifVersion }).then(drain);
      t.strictSame(await read(indexed.version), bytesOf(key), 'at the version listed');
      await subject.put(bucket, key, Buffer.from('rewritten'));
      t.match(
        await read(indexed.version).catch((error: unknown) => error),
        { kind: 'changed', message: /it changed since it was listed/ },
        'at a version it left',
      );
      t.strictSame(await read((await listed()).version), Buffer.from('rewritten'), 'at its new version');
    },
  );

  await t.test(
    "a key with . or .. segments reads the object it names or fails: never another, nor another bucket's",
    async (t) => {
      // A listing (or a user) may name such keys, and URL parsing resolves the segments: `../secret-bucket/secret.jpg`
      // read from the bucket would be the other bucket's object, `val/../cover.jpg` cover.jpg.
      const secretBucket = `${bucket}-secret`;
      await subject.createBucket(secretBucket);
      await subject.put(secretBucket, 'secret.jpg', Buffer.from('the secret'));
      const proxy = await recordingProxy(t, new URL(String(subject.credentials.endpoint)));
      const credentials = subject.atEndpoint(proxy.endpoint);
      for (const key of [
        `../${secretBucket}/secret.jpg`,
        `val/../../${secretBucket}/secret.jpg`,
        'val/../cover.jpg',
        './cover.jpg',
        'train/./1.jpg',
        '..',
        '.',
      ]) {
        const sentBefore = proxy.paths.length;
        const read = await provider
          .read(credentials, { target: bucket, key, maxBytes: 1024 })
          .then(drain)
          .then(
            (bytes) => bytes.toString(),
            (error: unknown) => error,
          );
        t.type(read, ProviderError, `${key}: none such, so a ProviderError`);
        t.match(read, { message: new RegExp(`could not read ${key.replace(/\./g, '\\.')} of \\w+ ${bucket}`) });
        // Sent with the key as named (the service refuses it or reads that very object), or refused before any request.
        const sent = proxy.paths.slice(sentBefore).map((path) => decodeURIComponent(path));
        t.ok(
          sent.every((path) => path.endsWith(`/${bucket}/${key}`) || path.endsWith(`/${bucket}/o/${key}`)),
          `${key}: sent as named or not at all (${sent.join(', ') || 'not sent'})`,
        );
      }
    },
  );

  await t.test('the credentials reach neither an answer nor the log', async (t) => {
    const logged = lines.join('');
    t.ok(logged.includes('/api/integrations/buckets'), 'the requests were logged');
    for (const secret of subject.secrets) {
      t.notOk(logged.includes(secret), 'not in the log');
      t.notOk(
        answers.some((answer) => answer.includes(secret)),
        'not in an answer',
      );
    }
  });
}
