// The Upload API end to end, on both blob stores: signed URL → PUT → complete, and every way a client
// can get it wrong. Real HTTP, real PostgreSQL, real disk and a real S3-protocol server.
import { createHash } from 'node:crypto';
import t, { type Test } from 'tap';
import { Workspace } from '../control-plane/src/account/workspace.entity.ts';
import { Dataset } from '../control-plane/src/datasets/dataset.entity.ts';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { Project } from '../control-plane/src/projects/project.entity.ts';
import { sweepOrphanFiles } from '../control-plane/src/storage/orphan-files.ts';
import { uploadPath } from '../control-plane/src/uploads/upload.service.ts';
import { UploadSession } from '../control-plane/src/uploads/upload-session.entity.ts';
import { expectError } from './helpers/expect.ts';
import { startS3Server } from './helpers/s3-server.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

const md5 = (bytes: Buffer) => createHash('md5').update(bytes).digest('hex');
const payload = (size: number, seed = 1) => Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed) % 251));

interface Ticket {
  sessionId: string;
  uploadUrl: string;
  expiresAt: string;
  headers: Record<string, string>;
}

/** A body sent chunked (no Content-Length), so the server has to count. */
function chunked(bytes: Buffer): { body: ReadableStream<Uint8Array>; duplex: 'half' } {
  return {
    duplex: 'half',
    body: new ReadableStream({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 1000)
          controller.enqueue(bytes.subarray(offset, offset + 1000));
        controller.close();
      },
    }),
  };
}

async function put(url: string, headers: Record<string, string>, body: Buffer | ReturnType<typeof chunked>) {
  const init = Buffer.isBuffer(body) ? { body } : body;
  const response = await fetch(url, { method: 'PUT', headers, ...init } as RequestInit);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as object };
}

async function arrange(t: Test, storageUrl?: string) {
  const server = await startTestServer(t, {
    env: {
      RATE_LIMIT_UPLOAD: '100000',
      RATE_LIMIT_DEFAULT: '100000',
      ...(storageUrl ? { STORAGE_URL: storageUrl } : {}),
    },
  });
  const account = server.services().account;
  for (const username of ['alice', 'bobby', 'vicky']) await account.createUser(username);
  await account.createTeam('acme-team', 'alice');
  await account.setMemberRole('acme-team', 'vicky', 'viewer');
  const keys = server.services().apiKeys;
  const alice = (await keys.create('alice', 'a')).key;
  const bobby = (await keys.create('bobby', 'b')).key;
  const viewer = (await keys.create('acme-team', 'v', 'vicky')).key;
  const em = server.orm.em.fork();
  const workspace = (handle: string) => em.findOneOrFail(Workspace, { handle });
  const dataset = em.create(Dataset, { workspace: await workspace('alice'), slug: 'shapes', name: 'Shapes' });
  const teamDataset = em.create(Dataset, {
    workspace: await workspace('acme-team'),
    slug: 'team-shapes',
    name: 'Team shapes',
  });
  const project = em.create(Project, { workspace: await workspace('alice'), slug: 'detector', name: 'Detector' });
  const model = em.create(Model, {
    workspace: await workspace('alice'),
    project,
    slug: 'yolo-shapes',
    name: 'YOLO shapes',
  });
  await em.flush();
  const ticket = async (body: Record<string, unknown>, key = alice) => {
    const response = await call<Ticket>(server, 'POST', '/api/upload/signed-url', { key, body });
    if (response.status !== 200)
      throw new Error(`signed URL refused: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const datasetTicket = (bytes: Buffer, filename = 'shapes.zip') =>
    ticket({
      assetType: 'datasets',
      assetId: dataset.id,
      filename,
      contentType: 'application/zip',
      totalBytes: bytes.length,
    });
  return { server, keys: { alice, bobby, viewer }, dataset, teamDataset, model, ticket, datasetTicket };
}

type World = Awaited<ReturnType<typeof arrange>>;

async function storageBytes(server: TestServer, key: string) {
  return (await call<{ byKind: Record<string, number> }>(server, 'GET', '/api/storage', { key })).body.byKind;
}

function suite(name: string, storageUrl: () => Promise<string | undefined>) {
  t.test(name, async (t) => {
    const world: World = await arrange(t, await storageUrl());
    const { server, keys } = world;

    t.test('round trip without md5: PUT streams, complete reports the file, storage counts it', async (t) => {
      const bytes = payload(10_000);
      const ticket = await world.datasetTicket(bytes);
      t.match(ticket, {
        sessionId: /^[0-9a-f]{24}$/,
        headers: { 'Content-Type': 'application/zip', 'If-None-Match': '*' },
      });
      const hours = (Date.parse(ticket.expiresAt) - Date.now()) / 3600_000;
      t.ok(hours > 11.9 && hours <= 12, 'the URL lives 12 hours');
      const stored = await put(ticket.uploadUrl, ticket.headers, bytes);
      t.same(stored.body, {
        success: true,
        size: 10_000,
        ...(server.storage.store.kind === 's3' ? { md5: md5(bytes) } : {}),
      });
      const done = await call(server, 'POST', '/api/upload/complete', {
        key: keys.alice,
        body: { sessionId: ticket.sessionId },
      });
      t.same(done.body, { success: true, file: { size: 10_000, contentType: 'application/zip' } });
      t.equal((await storageBytes(server, keys.alice)).datasetArchives, 10_000);
      const again = await call(server, 'POST', '/api/upload/complete', {
        key: keys.alice,
        body: { sessionId: ticket.sessionId, md5: md5(bytes) },
      });
      t.equal(again.status, 200, 'a completed dataset session completes again while its archive exists');
    });

    t.test('round trip with md5, and a competing completion with another digest is 409', async (t) => {
      const bytes = payload(5000, 7);
      const ticket = await world.datasetTicket(bytes, 'set.tar.gz');
      t.equal((await put(ticket.uploadUrl, ticket.headers, chunked(bytes))).status, 200, 'a chunked body is counted');
      const complete = (digest: string) =>
        call(server, 'POST', '/api/upload/complete', {
          key: keys.alice,
          body: { sessionId: ticket.sessionId, md5: digest },
        });
      t.equal((await complete(md5(bytes).toUpperCase())).status, 200, 'hex case does not matter');
      expectError(t, await complete(md5(Buffer.from('other'))), 409, /different md5/);
      t.equal((await complete(md5(bytes))).status, 200);
    });

    t.test('md5 mismatch: 400, the file is deleted and the same URL takes a correct file', async (t) => {
      const bytes = payload(3000, 3);
      const ticket = await world.datasetTicket(bytes);
      await put(ticket.uploadUrl, ticket.headers, bytes);
      const before = (await storageBytes(server, keys.alice)).datasetArchives;
      expectError(
        t,
        await call(server, 'POST', '/api/upload/complete', {
          key: keys.alice,
          body: { sessionId: ticket.sessionId, md5: 'f'.repeat(32) },
        }),
        400,
        /md5/,
      );
      t.equal((await storageBytes(server, keys.alice)).datasetArchives, before - 3000, 'the file is gone from storage');
      expectError(
        t,
        await call(server, 'POST', '/api/upload/complete', { key: keys.alice, body: { sessionId: ticket.sessionId } }),
        409,
        /No file/,
      );
      t.equal(
        (await put(ticket.uploadUrl, ticket.headers, bytes)).status,
        200,
        'the session is incomplete, so the URL works again',
      );
      t.equal(
        (
          await call(server, 'POST', '/api/upload/complete', {
            key: keys.alice,
            body: { sessionId: ticket.sessionId, md5: md5(bytes) },
          })
        ).status,
        200,
      );
    });

    t.test('competing completions at the same moment: exactly one digest wins', async (t) => {
      const bytes = payload(2000, 9);
      const ticket = await world.datasetTicket(bytes);
      await put(ticket.uploadUrl, ticket.headers, bytes);
      const statuses = (
        await Promise.all(
          [md5(bytes), 'a'.repeat(32)].map((digest) =>
            call(server, 'POST', '/api/upload/complete', {
              key: keys.alice,
              body: { sessionId: ticket.sessionId, md5: digest },
            }),
          ),
        )
      ).map((response) => response.status);
      t.ok(statuses.includes(409), `one of them conflicts (${statuses.join(', ')})`);
      t.ok(statuses.includes(200) || statuses.includes(400), 'the other one decided the session');
    });

    t.test('create-only: a second PUT is 412, and the first file is unchanged', async (t) => {
      const bytes = payload(1000, 11);
      const ticket = await world.datasetTicket(bytes);
      t.equal((await put(ticket.uploadUrl, ticket.headers, bytes)).status, 200);
      expectError(t, await put(ticket.uploadUrl, ticket.headers, payload(1000, 12)), 412);
      const done = await call(server, 'POST', '/api/upload/complete', {
        key: keys.alice,
        body: { sessionId: ticket.sessionId, md5: md5(bytes) },
      });
      t.equal(done.status, 200, 'the stored file is still the first one');
    });

    t.test('the PUT must carry the declared type, every returned header and exactly totalBytes', async (t) => {
      const bytes = payload(4000, 13);
      const ticket = await world.datasetTicket(bytes);
      expectError(t, await put(ticket.uploadUrl, { 'Content-Type': 'application/zip' }, bytes), 400, /If-None-Match/);
      expectError(
        t,
        await put(ticket.uploadUrl, { ...ticket.headers, 'Content-Type': 'application/x-tar' }, bytes),
        400,
        /Content-Type must be application\/zip/,
      );
      expectError(t, await put(ticket.uploadUrl, ticket.headers, bytes.subarray(0, 3999)), 400, /Content-Length 3999/);
      expectError(t, await put(ticket.uploadUrl, ticket.headers, chunked(bytes.subarray(0, 2500))), 400, /fewer bytes/);
      expectError(
        t,
        await put(ticket.uploadUrl, ticket.headers, chunked(Buffer.concat([bytes, bytes]))),
        400,
        /more bytes/,
      );
      const session = await server.orm.em.fork().findOneOrFail(UploadSession, ticket.sessionId);
      t.equal(session.status, 'pending', 'nothing was accepted');
      t.equal(await server.storage.store.head(session.objectKey), undefined, 'nothing partial is visible');
      t.equal((await put(ticket.uploadUrl, ticket.headers, bytes)).status, 200, 'a correct PUT still works');
    });

    t.test('tampered, expired and other-method URLs are 403 and reveal nothing', async (t) => {
      const bytes = payload(500, 17);
      const ticket = await world.datasetTicket(bytes);
      const url = new URL(ticket.uploadUrl);
      const signature = url.searchParams.get('signature')!;
      const tampered = new URL(url);
      tampered.searchParams.set('signature', `${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`);
      const otherSession = new URL(url);
      otherSession.pathname = uploadPath('0'.repeat(24));
      const longer = new URL(url);
      longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
      const expired = server.storage.signer.sign('PUT', url.pathname, new Date(Date.now() - 1000));
      const unsigned = new URL(url);
      unsigned.search = '';
      for (const [what, bad] of [
        ['tampered', tampered],
        ['other session', otherSession],
        ['extended', longer],
        ['expired', expired],
        ['unsigned', unsigned],
      ]) {
        expectError(t, await put(String(bad), ticket.headers, bytes), 403, 'Invalid or expired signed URL');
        t.pass(String(what));
      }
      const downloadAsUpload = server.storage.signer.sign('PUT', '/files/ws/x/y.zip', new Date(Date.now() + 60_000));
      expectError(
        t,
        await call(server, 'GET', downloadAsUpload.slice(server.url.length)),
        403,
        'Invalid or expired signed URL',
      );
    });

    t.test('assets of another workspace are 404; viewers are 403; bad bodies are 400', async (t) => {
      const body = {
        assetType: 'datasets',
        assetId: world.dataset.id,
        filename: 'a.zip',
        contentType: 'application/zip',
        totalBytes: 10,
      };
      expectError(t, await call(server, 'POST', '/api/upload/signed-url', { key: keys.bobby, body }), 404);
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', {
          key: keys.viewer,
          body: { ...body, assetId: world.teamDataset.id },
        }),
        403,
      );
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', { key: keys.alice, body: { ...body, filename: 'a.rar' } }),
        400,
        /^body\.filename: dataset uploads must end in/,
      );
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', {
          key: keys.alice,
          body: { ...body, filename: '../a.zip' },
        }),
        400,
        /^body\.filename/,
      );
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', {
          key: keys.alice,
          body: { ...body, filename: `${'x'.repeat(253)}.zip` },
        }),
        400,
        /^body\.filename/,
      );
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', { key: keys.alice, body: { ...body, totalBytes: '10' } }),
        400,
        /^body\.totalBytes/,
      );
      expectError(
        t,
        await call(server, 'POST', '/api/upload/signed-url', {
          key: keys.alice,
          body: { ...body, assetType: 'images' },
        }),
        400,
        /^body\.assetType/,
      );
      const { sessionId } = await world.datasetTicket(payload(10));
      expectError(
        t,
        await call(server, 'POST', '/api/upload/complete', { key: keys.bobby, body: { sessionId } }),
        404,
        'Upload session not found',
      );
    });

    t.test('model files: attached on completion, the session ends, a new file replaces the old', async (t) => {
      const first = payload(6000, 19);
      const modelTicket = (bytes: Buffer) =>
        world.ticket({
          assetType: 'models',
          assetId: world.model.id,
          filename: 'best.pt',
          contentType: 'application/octet-stream',
          totalBytes: bytes.length,
        });
      const ticket = await modelTicket(first);
      t.same(ticket.headers, { 'Content-Type': 'application/octet-stream' }, 'model URLs are not create-only');
      t.equal((await put(ticket.uploadUrl, ticket.headers, first)).status, 200);
      const done = await call(server, 'POST', '/api/upload/complete', {
        key: keys.alice,
        body: { sessionId: ticket.sessionId, checksum: 'sha256:abc', md5: md5(first) },
      });
      t.same(done.body, { success: true, file: { size: 6000, contentType: 'application/octet-stream' } });
      expectError(
        t,
        await call(server, 'POST', '/api/upload/complete', { key: keys.alice, body: { sessionId: ticket.sessionId } }),
        404,
        'Upload session not found',
      );
      const model = await server.orm.em.fork().findOneOrFail(Model, world.model.id);
      t.match(model, { fileBytes: 6000, fileMd5: md5(first), fileChecksum: 'sha256:abc' });
      const firstKey = model.fileKey!;

      const second = payload(7000, 23);
      const next = await modelTicket(second);
      await put(next.uploadUrl, next.headers, second);
      await call(server, 'POST', '/api/upload/complete', { key: keys.alice, body: { sessionId: next.sessionId } });
      // Clones may share weights: the replaced file goes with the hourly sweep, once nothing refers to it.
      t.ok(await server.storage.store.head(firstKey), 'the replaced file stays until the sweep');
      const services = server.services();
      await services.em
        .getConnection()
        .execute(`update stored_objects set updated_at = now() - interval '2 days' where key = ?`, [firstKey]);
      t.equal(await sweepOrphanFiles(services.em, services.storage), 1);
      t.equal(await server.storage.store.head(firstKey), undefined, 'the sweep deleted the replaced file');
      t.equal((await storageBytes(server, keys.alice)).modelFiles, 7000);
      const download = await fetch(
        await server.storage.urls.download((await server.orm.em.fork().findOneOrFail(Model, world.model.id)).fileKey!, {
          expiresInSeconds: 60,
        }),
      );
      t.equal(md5(Buffer.from(await download.arrayBuffer())), md5(second));
    });

    t.test('signed downloads: whole, ranges and the download name', async (t) => {
      const bytes = payload(20_000, 29);
      const ticket = await world.datasetTicket(bytes, 'ranges.zip');
      await put(ticket.uploadUrl, ticket.headers, bytes);
      const { objectKey } = await server.orm.em.fork().findOneOrFail(UploadSession, ticket.sessionId);
      const url = await server.storage.urls.download(objectKey, { expiresInSeconds: 60, filename: 'my shapes.zip' });
      const whole = await fetch(url);
      t.equal(whole.status, 200);
      t.equal(whole.headers.get('content-type'), 'application/zip');
      t.match(whole.headers.get('content-disposition') ?? '', /attachment; filename="my shapes.zip"/);
      t.equal(md5(Buffer.from(await whole.arrayBuffer())), md5(bytes));
      const ranged = async (range: string) => {
        const response = await fetch(url, { headers: { range } });
        return {
          status: response.status,
          contentRange: response.headers.get('content-range'),
          bytes: Buffer.from(await response.arrayBuffer()),
        };
      };
      t.match(await ranged('bytes=0-9'), {
        status: 206,
        contentRange: 'bytes 0-9/20000',
        bytes: bytes.subarray(0, 10),
      });
      t.match(await ranged('bytes=19990-'), {
        status: 206,
        contentRange: 'bytes 19990-19999/20000',
        bytes: bytes.subarray(19990),
      });
      t.match(await ranged('bytes=-5'), { status: 206, bytes: bytes.subarray(19995) });
      t.match(await ranged('bytes=100-99999'), {
        status: 206,
        contentRange: 'bytes 100-19999/20000',
        bytes: bytes.subarray(100),
      });
      t.equal((await ranged('bytes=20000-')).status, 416);
      const tampered = new URL(url);
      tampered.searchParams.set(
        tampered.searchParams.has('X-Amz-Signature') ? 'X-Amz-Signature' : 'signature',
        'x'.repeat(64),
      );
      t.equal((await fetch(tampered)).status, 403, 'a tampered download URL is refused');
      if (server.storage.store.kind === 'disk') {
        const renamed = new URL(url);
        renamed.searchParams.set('filename', 'other.zip');
        expectError(
          t,
          await call(server, 'GET', renamed.pathname + renamed.search),
          403,
          'Invalid or expired signed URL',
        );
      }
    });
  });
}

t.test('the sweep drops unused expired sessions and files never completed, and keeps the rest', async (t) => {
  const world = await arrange(t);
  const { server } = world;
  const bytes = payload(800, 31);
  await world.datasetTicket(bytes); // never used
  const abandoned = await world.datasetTicket(bytes);
  const completed = await world.datasetTicket(bytes);
  for (const ticket of [abandoned, completed]) await put(ticket.uploadUrl, ticket.headers, bytes);
  await call(server, 'POST', '/api/upload/complete', {
    key: world.keys.alice,
    body: { sessionId: completed.sessionId },
  });
  const em = server.orm.em.fork();
  const abandonedKey = (await em.findOneOrFail(UploadSession, abandoned.sessionId)).objectKey;

  const uploads = server.services().uploads;
  t.equal(await uploads.sweepExpired(new Date(Date.now() + 11 * 3600_000)), 0, 'nothing goes before the URLs expire');
  t.equal(await uploads.sweepExpired(new Date(Date.now() + 13 * 3600_000)), 1, 'an unused expired session goes');
  t.equal(
    await server.storage.store.head(abandonedKey).then((head) => head?.size),
    800,
    'a file PUT but not completed gets a grace period',
  );
  t.equal(await uploads.sweepExpired(new Date(Date.now() + 37 * 3600_000)), 1, 'then it goes too');
  t.equal(await server.storage.store.head(abandonedKey), undefined, 'with its file');
  const left = await server.orm.em.fork().find(UploadSession, {});
  t.same(
    left.map((session) => session.id),
    [completed.sessionId],
    'the completed session stays',
  );
  t.equal(
    (await storageBytes(server, world.keys.alice)).datasetArchives,
    800,
    'storage counts only the completed file',
  );
});

suite('disk store', async () => undefined);
suite('S3 store', async () => (await startS3Server(t)).storageUrl);

t.test('signed URLs and completions use the Upload rate limit', async (t) => {
  const server = await startTestServer(t, { env: { RATE_LIMIT_UPLOAD: '2' } });
  await server.services().account.createUser('carol');
  const key = (await server.services().apiKeys.create('carol', 'c')).key;
  const body = { sessionId: '0'.repeat(24) };
  expectError(t, await call(server, 'POST', '/api/upload/complete', { key, body }), 404);
  expectError(t, await call(server, 'POST', '/api/upload/complete', { key, body }), 404);
  expectError(t, await call(server, 'POST', '/api/upload/signed-url', { key, body: {} }), 429, /upload/, [
    'retryAfter',
    'resetAt',
  ]);
});
