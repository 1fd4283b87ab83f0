// One contract for both blob stores, run against local disk and a real S3 server (SeaweedFS): streamed
// all-or-nothing writes, create-only, ranges, listing, deletes, and the presigned URLs of S3.
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';
import {
  BlobExists,
  BlobLengthMismatch,
  BlobRangeNotSatisfiable,
  type BlobStore,
} from '../control-plane/src/storage/blob-store.ts';
import { DiskBlobStore } from '../control-plane/src/storage/disk-store.ts';
import { md5Of } from '../control-plane/src/storage/md5-of.ts';
import { partBytesFor } from '../control-plane/src/storage/s3-store.ts';
import { openBlobStore } from '../control-plane/src/storage/store-from-config.ts';
import { startS3Server, type TestS3Server } from './helpers/s3-server.ts';

const MiB = 1024 * 1024;
const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
/** What put returns: the S3 store hashes while streaming; the disk store leaves that to md5Of. */
const receipt = (store: BlobStore, size: number, digest: string) =>
  store.kind === 's3' ? { size, md5: digest } : { size };

/** 256 MiB made on the fly, one MiB at a time, hashed as it goes (nothing is computed ahead, to keep RSS honest). */
const GENERATED_BYTES = 256 * MiB;
function* generated(hash: Hash): Generator<Buffer> {
  for (let i = 0; i < GENERATED_BYTES / MiB; i++) {
    const chunk = Buffer.alloc(MiB, i);
    hash.update(chunk);
    yield chunk;
  }
}

/** What a promise rejects with (undefined if it resolves), for instanceof checks. */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `bytes` then, after `failAfter` of them, a stream error, as when a client drops an upload. */
function brokenBody(bytes: Buffer, failAfter: number): Readable {
  return Readable.from(
    (async function* () {
      for (let offset = 0; offset < failAfter; offset += MiB)
        yield bytes.subarray(offset, Math.min(offset + MiB, failAfter));
      throw new Error('client went away');
    })(),
  );
}

async function put(
  store: BlobStore,
  key: string,
  bytes: Buffer,
  contentType = 'application/octet-stream',
  createOnly = false,
) {
  return store.put(key, Readable.from([bytes]), { contentType, expectedBytes: bytes.length, createOnly });
}

function contract(name: string, open: (t: Test) => Promise<{ store: BlobStore; s3?: TestS3Server }>) {
  t.test(name, async (t) => {
    const { store, s3 } = await open(t);
    t.teardown(() => store.close());

    t.test('round trip: same bytes, MD5 as node computes it, content type kept', async (t) => {
      const bytes = randomBytes(300_000);
      const stored = await put(store, 'trip/photo.jpg', bytes, 'image/jpeg');
      t.same(stored, receipt(store, bytes.length, md5(bytes)));
      t.same(await store.head('trip/photo.jpg'), { size: bytes.length, contentType: 'image/jpeg' });
      const read = await store.get('trip/photo.jpg');
      t.equal(read?.contentType, 'image/jpeg');
      t.equal(read?.size, bytes.length);
      t.equal(read?.range, undefined);
      t.ok((await readAll(read!.stream)).equals(bytes), 'same bytes');
      t.equal(await md5Of(store, 'trip/photo.jpg'), md5(bytes), 'md5Of reads the object back');
      t.equal(await md5Of(store, 'trip/missing'), undefined);
      t.equal(await store.get('trip/missing'), undefined, 'a missing key reads as undefined');
      t.equal(await store.head('trip/missing'), undefined);
    });

    t.test('an empty object is an object', async (t) => {
      t.same(await put(store, 'empty/file', Buffer.alloc(0), 'text/plain'), receipt(store, 0, md5(Buffer.alloc(0))));
      t.same(await store.head('empty/file'), { size: 0, contentType: 'text/plain' });
    });

    t.test('create-only refuses an existing key and leaves its object alone', async (t) => {
      const first = Buffer.from('first');
      await put(store, 'once/key', first, 'text/plain', true);
      t.type(await failure(put(store, 'once/key', Buffer.from('second!'), 'image/png', true)), BlobExists);
      t.same(await store.head('once/key'), { size: first.length, contentType: 'text/plain' });
      t.ok((await readAll((await store.get('once/key'))!.stream)).equals(first), 'first bytes kept');
      const racing = await Promise.all(
        ['a', 'b', 'c', 'd'].map((body) => failure(put(store, 'once/raced', Buffer.from(body), 'text/plain', true))),
      );
      t.equal(racing.filter((error) => error === undefined).length, 1, 'of racing create-only puts exactly one wins');
      t.equal(racing.filter((error) => error instanceof BlobExists).length, 3, 'the others are told it exists');
      await put(store, 'once/key', Buffer.from('replaced'), 'text/csv');
      t.same(await store.head('once/key'), { size: 8, contentType: 'text/csv' }, 'a plain put replaces');
    });

    t.test('a body longer or shorter than declared is refused and nothing is visible', async (t) => {
      const bytes = randomBytes(1000);
      const options = { contentType: 'text/plain' };
      t.type(
        await failure(store.put('length/long', Readable.from([bytes]), { ...options, expectedBytes: 999 })),
        BlobLengthMismatch,
      );
      t.type(
        await failure(store.put('length/short', Readable.from([bytes]), { ...options, expectedBytes: 1001 })),
        BlobLengthMismatch,
      );
      t.equal(await store.head('length/long'), undefined);
      t.equal(await store.head('length/short'), undefined);
      // Large enough to be a multipart upload on S3: the parts already sent are abandoned.
      const big = Buffer.alloc(20 * MiB, 7);
      t.type(
        await failure(store.put('length/big', Readable.from([big]), { ...options, expectedBytes: 21 * MiB })),
        BlobLengthMismatch,
      );
      t.equal(await store.head('length/big'), undefined);
      t.type(
        await failure(
          store.put('length/exists', Readable.from([bytes]), { ...options, expectedBytes: 10, createOnly: true }),
        ),
        BlobLengthMismatch,
      );
      t.equal(await store.head('length/exists'), undefined, 'a refused create-only put does not claim the key');
      await put(store, 'length/exists', bytes, 'text/plain', true);
    });

    t.test('a body that breaks midway leaves nothing visible', async (t) => {
      const bytes = randomBytes(12 * MiB);
      const broken = store.put('broken/upload', brokenBody(bytes, 10 * MiB), {
        contentType: 'text/plain',
        expectedBytes: bytes.length,
      });
      await t.rejects(broken, /client went away/);
      t.equal(await store.head('broken/upload'), undefined);
      const early = store.put('broken/early', brokenBody(bytes, MiB), {
        contentType: 'text/plain',
        expectedBytes: bytes.length,
      });
      await t.rejects(early, /client went away/);
      t.equal(await store.head('broken/early'), undefined);
    });

    t.test('ranges: inclusive, an end past the object clamped, a start past it unsatisfiable', async (t) => {
      const bytes = Buffer.from(Array.from({ length: 100 }, (_, i) => i));
      await put(store, 'range/hundred', bytes);
      const read = async (start: number, end: number) => {
        const got = await store.get('range/hundred', { start, end });
        return { range: got?.range, size: got?.size, bytes: [...(await readAll(got!.stream))] };
      };
      t.same(
        await read(0, 9),
        { range: { start: 0, end: 9 }, size: 100, bytes: [...bytes.subarray(0, 10)] },
        'first bytes',
      );
      t.same(
        await read(40, 59),
        { range: { start: 40, end: 59 }, size: 100, bytes: [...bytes.subarray(40, 60)] },
        'middle',
      );
      t.same(
        await read(90, 10_000),
        { range: { start: 90, end: 99 }, size: 100, bytes: [...bytes.subarray(90)] },
        'tail clamped',
      );
      t.same(await read(99, 99), { range: { start: 99, end: 99 }, size: 100, bytes: [99] }, 'last byte');
      const past = await failure(store.get('range/hundred', { start: 100, end: 200 }));
      t.type(past, BlobRangeNotSatisfiable);
      t.equal((past as BlobRangeNotSatisfiable).size, 100, 'the error knows the size (for Content-Range: bytes */100)');
      t.type(await failure(store.get('range/hundred', { start: 5, end: 2 })), BlobRangeNotSatisfiable);
      await put(store, 'range/empty', Buffer.alloc(0));
      t.type(await failure(store.get('range/empty', { start: 0, end: 0 })), BlobRangeNotSatisfiable);
    });

    t.test('delete is idempotent', async (t) => {
      await put(store, 'gone/file', Buffer.from('x'), 'text/plain');
      await store.delete('gone/file');
      t.equal(await store.head('gone/file'), undefined);
      await store.delete('gone/file');
      await store.delete('gone/never-was');
      await put(store, 'gone/file', Buffer.from('again'));
      t.same(
        await store.head('gone/file'),
        { size: 5, contentType: 'application/octet-stream' },
        'no stale type comes back',
      );
    });

    t.test('list walks everything under a prefix', async (t) => {
      for (const [key, size] of [
        ['list/a/1', 1],
        ['list/a/2', 2],
        ['list/a/deep/3', 3],
        ['list/ab/4', 4],
        ['list/b/5', 5],
      ] as const) {
        await put(store, key, Buffer.alloc(size));
      }
      const listed = async (prefix: string) => {
        const found = [];
        for await (const entry of store.list(prefix)) found.push(entry);
        return found.sort((a, b) => a.key.localeCompare(b.key));
      };
      t.same(await listed('list/a/'), [
        { key: 'list/a/1', size: 1 },
        { key: 'list/a/2', size: 2 },
        { key: 'list/a/deep/3', size: 3 },
      ]);
      t.same(
        (await listed('list/a')).map((entry) => entry.key),
        ['list/a/1', 'list/a/2', 'list/a/deep/3', 'list/ab/4'],
        'a prefix need not end at a folder',
      );
      t.same(await listed('list/nothing/'), []);
      t.equal(await store.head('list/a'), undefined, 'a prefix of keys is not an object');
      t.equal(await store.get('list/a'), undefined);
      t.equal(
        (await listed('')).filter((entry) => entry.key.startsWith('list/')).length,
        5,
        'the empty prefix lists all',
      );
    });

    t.test('a 256 MiB body streams through without being held in memory', async (t) => {
      const sent = createHash('md5');
      const body = Readable.from(generated(sent));
      const before = process.memoryUsage.rss();
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
      const sentMd5 = () => sent.digest('hex');
      let digest;
      try {
        const stored = await store.put('stream/big', body, {
          contentType: 'application/zip',
          expectedBytes: GENERATED_BYTES,
        });
        digest = sentMd5();
        t.same(stored, receipt(store, GENERATED_BYTES, digest));
      } finally {
        clearInterval(sampler);
      }
      t.comment(`${store.kind}: RSS grew ${((peak - before) / MiB).toFixed(1)} MiB while storing 256 MiB`);
      // Holding the body would cost 256 MiB; streaming costs a few buffers plus the garbage V8 has yet to collect.
      t.ok(peak - before < 128 * MiB, 'RSS grows by less than half the body');
      const read = await store.get('stream/big');
      const readHash = createHash('md5');
      for await (const chunk of read!.stream) readHash.update(chunk as Buffer);
      t.equal(readHash.digest('hex'), digest, 'read back the same bytes');
    });

    if (s3) s3Only(t, store, s3);
    else diskOnly(t, store as DiskBlobStore);
  });
}

function s3Only(t: Test, store: BlobStore, s3: TestS3Server) {
  t.test('s3: objects are not local files', async (t) => {
    await put(store, 'local/file', Buffer.from('x'));
    t.equal(store.localPath('local/file'), undefined);
  });

  t.test('s3: the refused and broken multipart uploads above were aborted', async (t) => {
    const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
    t.teardown(() => client.destroy());
    const pending = await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }));
    t.same(pending.Uploads ?? [], []);
  });

  t.test('presigned URLs: fetchable, with the download name; tampered or expired ones refused', async (t) => {
    await put(store, 'direct/report.csv', Buffer.from('a,b\n1,2\n'), 'text/csv');
    await put(store, 'direct/other.csv', Buffer.from('secret'), 'text/csv');
    const url = await store.directUrl('direct/report.csv', {
      method: 'GET',
      expiresInSeconds: 60,
      filename: 'report.csv',
    });
    const response = await fetch(url!);
    t.equal(response.status, 200);
    t.equal(await response.text(), 'a,b\n1,2\n');
    t.match(response.headers.get('content-disposition'), /^attachment; filename="report\.csv"/);

    const signature = new URL(url!);
    const original = signature.searchParams.get('X-Amz-Signature')!;
    signature.searchParams.set('X-Amz-Signature', `${original[0] === '0' ? '1' : '0'}${original.slice(1)}`);
    t.equal((await fetch(signature)).status, 403, 'a changed signature is refused');
    const otherKey = new URL(url!.replace('report.csv?', 'other.csv?'));
    t.equal((await fetch(otherKey)).status, 403, 'another key under the same signature is refused');
    const longer = new URL(url!);
    longer.searchParams.set('X-Amz-Expires', '604800');
    t.equal((await fetch(longer)).status, 403, 'a stretched expiry is refused');

    const short = await store.directUrl('direct/report.csv', { method: 'GET', expiresInSeconds: 1 });
    t.equal((await fetch(short!)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    t.equal((await fetch(short!)).status, 403, 'an expired URL is refused');
  });
}

function diskOnly(t: Test, store: DiskBlobStore) {
  t.test('disk: no direct URLs (the control plane serves the bytes)', async (t) => {
    await put(store, 'direct/file', Buffer.from('x'));
    t.equal(await (store as BlobStore).directUrl('direct/file', { method: 'GET', expiresInSeconds: 60 }), undefined);
  });

  t.test('disk: an object is a local file that readers can use in place', async (t) => {
    await put(store, 'local/archive.zip', Buffer.from('zip bytes'));
    t.equal(readFileSync(store.localPath('local/archive.zip'), 'utf8'), 'zip bytes');
    t.throws(() => store.localPath('../outside'));
  });

  t.test('disk: keys that could leave the root or reach its own folders are refused', async (t) => {
    const bad = [
      '',
      '../escape',
      'a/../../escape',
      '/etc/passwd',
      'a\\..\\b',
      'a\0b',
      'a//b',
      'a/',
      './a',
      '.tmp/x',
      '.meta/x.json',
    ];
    for (const key of bad) {
      await t.rejects(put(store, key, Buffer.from('x')), /invalid blob key/, `put ${JSON.stringify(key)}`);
      await t.rejects(store.get(key), /invalid blob key/, `get ${JSON.stringify(key)}`);
      await t.rejects(store.head(key), /invalid blob key/, `head ${JSON.stringify(key)}`);
      await t.rejects(store.delete(key), /invalid blob key/, `delete ${JSON.stringify(key)}`);
    }
    t.notOk(existsSync(join(store.root, '..', 'escape')), 'nothing written outside the root');
  });

  t.test(
    'disk: folders removed from under the store (by an operator, a restore) are made again by the next put',
    async (t) => {
      await put(store, 'gone/deep/a.jpg', Buffer.from('first'), 'image/jpeg');
      for (const folder of ['gone', '.meta', '.tmp'])
        rmSync(join(store.root, folder), { recursive: true, force: true });
      t.same(await put(store, 'gone/deep/b.jpg', Buffer.from('second'), 'image/jpeg', true), { size: 6 });
      const read = await store.get('gone/deep/b.jpg');
      t.equal((await readAll(read!.stream)).toString(), 'second');
      t.equal(read!.contentType, 'image/jpeg', 'its content type is kept too');
      t.same(readdirSync(join(store.root, '.tmp')), [], 'and its temp file is gone');
    },
  );

  t.test("disk: a put that owns its body's chunks frees each once written, and stores the same bytes", async (t) => {
    // Chunks of their own memory (as a request's body arrives), and one that is a view into a larger buffer.
    const owned = Array.from({ length: 40 }, () => randomBytes(64 * 1024));
    const shared = randomBytes(200_000);
    const view = shared.subarray(1000, 101_000);
    const expected = Buffer.concat([...owned, view]);
    const stored = await store.put('owned/a.bin', Readable.from([...owned, view]), {
      contentType: 'application/octet-stream',
      expectedBytes: expected.length,
      ownedChunks: true,
    });
    t.same(stored, { size: expected.length });
    t.ok((await readAll((await store.get('owned/a.bin'))!.stream)).equals(expected), 'byte for byte');
    t.ok(
      owned.every((chunk) => chunk.buffer.detached),
      'every chunk that was all of its memory is freed',
    );
    t.equal(shared.length, 200_000, 'a view into a larger buffer leaves that buffer alone');

    // Without the option the caller's buffers are untouched.
    const kept = randomBytes(64 * 1024);
    await store.put('owned/b.bin', Readable.from([kept]), {
      contentType: 'application/octet-stream',
      expectedBytes: kept.length,
    });
    t.equal(kept.buffer.detached, false);
    t.equal(kept.length, 64 * 1024);
  });

  t.test('disk: the refused and broken writes above left no temp file behind', async (t) => {
    t.same(readdirSync(join(store.root, '.tmp')), []);
  });
}

contract('disk', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'vp-blobs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return { store: await openBlobStore(pathToFileURL(join(dir, 'root')).href, '/unused') };
});

contract('s3', async (t) => {
  const s3 = await startS3Server(t);
  return { store: await openBlobStore(s3.storageUrl, '/unused'), s3 };
});

t.test('STORAGE_URL', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-data-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const unset = await openBlobStore(undefined, dataDir);
  t.equal(unset.kind, 'disk');
  await put(unset, 'a/b', Buffer.from('x'));
  t.ok(existsSync(join(dataDir, 'blobs', 'a', 'b')), 'unset keeps blobs under <dataDir>/blobs');

  const server = await startS3Server(t);
  const wrongBucket = server.storageUrl.replace(`s3://${server.bucket}?`, 's3://no-such-bucket?');
  await t.rejects(openBlobStore(wrongBucket, dataDir), /STORAGE_URL: cannot reach bucket "no-such-bucket"/);
  const wrongSecret = server.storageUrl.replace(/secretAccessKey=[^&]+/, 'secretAccessKey=wrong');
  await t.rejects(openBlobStore(wrongSecret, dataDir), /STORAGE_URL: cannot reach bucket/);
  await t.rejects(openBlobStore('s3://bucket', dataDir), /needs a bucket and an endpoint/);
  await t.rejects(
    openBlobStore(`${server.storageUrl.replace(/&secretAccessKey=[^&]+/, '')}`, dataDir),
    /both accessKeyId and secretAccessKey/,
  );
});

t.test('S3 part sizes: the 5 MiB minimum, larger only where 10,000 parts would not hold the object', async (t) => {
  t.equal(partBytesFor(1), 5 * MiB);
  t.equal(partBytesFor(2 * 1024 * MiB), 5 * MiB, 'a 2 GiB upload uses the smallest parts, bounding memory');
  for (const size of [50 * 1024 * MiB, 2 ** 40])
    t.ok(Math.ceil(size / partBytesFor(size)) <= 10_000, `${size} bytes fit in S3's part count`);
});
