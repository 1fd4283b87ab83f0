// Storage integrations (S3) against a real S3 server on loopback (SeaweedFS, which checks SigV4): discover, connect,
// list, browse, update, disconnect; credentials sealed at rest, never answered, never logged; workspaces isolated.
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import t from 'tap';
import { createLogger } from '../control-plane/src/server.ts';
import { adminQuery } from './helpers/db.ts';
import { expectError } from './helpers/expect.ts';
import { startS3Server, type TestS3Server } from './helpers/s3-server.ts';
import { runNode } from './helpers/run-node.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface Integration {
  id: string;
  provider: string;
  credentialIdentity: string;
  targets: string[];
  processing: boolean;
  createdAt: string;
}

/** A second S3 user who may read the bucket "photos" and nothing else. */
const reader = {
  accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase()}`,
  secretAccessKey: randomBytes(20).toString('hex'),
};

async function fillBuckets(s3: TestS3Server): Promise<void> {
  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
  for (const bucket of ['photos', 'private']) await client.send(new CreateBucketCommand({ Bucket: bucket }));
  for (const key of ['cover.jpg', 'train/1.jpg', 'train/2.jpg', 'train/3.jpg', 'val/a b&c.jpg', 'val/deep/x.jpg']) {
    await client.send(new PutObjectCommand({ Bucket: 'photos', Key: key, Body: Buffer.from(`bytes of ${key}`) }));
  }
  await client.send(new PutObjectCommand({ Bucket: 'private', Key: 'secret.jpg', Body: Buffer.from('x') }));
  client.destroy();
}

/** Every line the control plane logged, at every level. */
function capturedLog(): { log: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  return { log: createLogger({ logLevel: 'trace' }, sink), text: () => lines.join('') };
}

const s3 = await startS3Server(t, { identities: [{ ...reader, actions: ['Read:photos', 'List:photos'] }] });
await fillBuckets(s3);
const admin = {
  accessKeyId: s3.accessKeyId,
  secretAccessKey: s3.secretAccessKey,
  endpoint: s3.endpoint,
  region: 'us-east-1',
};
const readerCredentials = { ...reader, endpoint: s3.endpoint, region: 'us-east-1' };
const logs = capturedLog();
// The test's S3 server is on loopback: the operator allows it, as an appliance allows storage on its premises.
const world: World = await startWorld(
  t,
  { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', RATE_LIMIT_MUTATION: '1000000' },
  { log: logs.log },
);
const api = <T = Record<string, unknown>>(method: string, path: string, key: string, body?: unknown) =>
  call<T>(world.server, method, path, { key, body });
/** The stored rows, with the columns these tests look at. */
const rows = async () =>
  (await adminQuery('select * from storage_integrations order by created_at', [], world.server.databaseUrl)).rows as {
    workspace_id: string;
    credentials: Buffer;
    credentials_key_id: string;
  }[];

t.test('discover lists the buckets the credentials can read and saves nothing', async (t) => {
  const all = await api<{ targets: string[] }>('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: admin,
  });
  t.equal(all.status, 200);
  t.strictSame(all.body, { targets: ['photos', 'private', s3.bucket].sort() });
  const limited = await api<{ targets: string[] }>('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: readerCredentials,
  });
  t.strictSame(limited.body, { targets: ['photos'] }, 'a bucket these credentials cannot list is not offered');
  t.strictSame(await rows(), [], 'nothing saved');
});

t.test('credentials the server refuses, and endpoints that do not answer, are clear errors', async (t) => {
  const wrong = await api('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: { ...admin, secretAccessKey: 'not-the-secret' },
  });
  expectError(t, wrong, 400, /refused these credentials to list the buckets \(HTTP 403\)/);
  const notReadable = await api('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: readerCredentials,
    targets: ['photos', 'private'],
  });
  expectError(t, notReadable, 400, /refused these credentials to list bucket private/);
  const missing = await api('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: admin,
    targets: ['no-such-bucket'],
  });
  expectError(t, missing, 400, /no such bucket/);
  const closed = await api('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: { ...admin, endpoint: 'http://127.0.0.1:1' },
  });
  expectError(t, closed, 400, 'S3 at 127.0.0.1:1 could not list the buckets: could not connect to 127.0.0.1:1');
  const unnamed = await api('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: { ...admin, endpoint: 'http://storage.invalid' },
  });
  expectError(t, unnamed, 400, 'S3 at storage.invalid could not list the buckets: could not resolve storage.invalid');
  const broken = createServer((_request, response) => response.writeHead(503).end('down for maintenance'));
  await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => broken.close());
  const failing = await api('POST', '/api/integrations/buckets/discover', world.alice, {
    provider: 's3',
    credentials: { ...admin, endpoint: `http://127.0.0.1:${(broken.address() as AddressInfo).port}` },
  });
  expectError(t, failing, 502, /could not list the buckets: HTTP 503$/);
  t.strictSame(await rows(), [], 'nothing saved');
});

t.test('bad input is a 400 naming the field', async (t) => {
  const url = '/api/integrations/buckets';
  expectError(
    t,
    await api('POST', url, world.alice, { provider: 'ftp', credentials: {}, targets: ['photos'] }),
    400,
    /provider: must be s3, gcs, azure or local/,
  );
  expectError(t, await api('POST', url, world.alice, { provider: 's3', targets: ['photos'] }), 400, /body.credentials/);
  expectError(
    t,
    await api('POST', url, world.alice, { provider: 's3', credentials: admin, targets: [] }),
    400,
    /body.targets/,
  );
  expectError(
    t,
    await api('POST', url, world.alice, { provider: 's3', credentials: admin, targets: ['Not_A_Bucket'] }),
    400,
    /body.targets.0: must be a bucket name/,
  );
  expectError(
    t,
    await api('POST', url, world.alice, {
      provider: 's3',
      credentials: { ...admin, endpoint: 'ftp://127.0.0.1/' },
      targets: ['photos'],
    }),
    400,
    /body.credentials.endpoint/,
  );
  expectError(
    t,
    await api('POST', url, world.alice, {
      provider: 's3',
      credentials: { ...admin, endpoint: `${s3.endpoint}/photos` },
      targets: ['photos'],
    }),
    400,
    /no path, query or user/,
  );
  expectError(
    t,
    await api('POST', `${url}/discover`, world.alice, { provider: 's3', credentials: { ...admin, extra: 1 } }),
    400,
    /body.credentials/,
  );
  expectError(
    t,
    await api('POST', `${url}/discover`, world.alice, {
      provider: 's3',
      credentials: { ...admin, accessKeyId: 'AKIA\nX' },
    }),
    400,
    /body.credentials.accessKeyId: must be printable ASCII/,
  );
  expectError(
    t,
    await api('POST', `${url}/discover`, world.alice, {
      provider: 's3',
      credentials: { ...admin, sessionToken: 'tökén' },
    }),
    400,
    /body.credentials.sessionToken: must be printable ASCII/,
  );
  expectError(
    t,
    await api('POST', `${url}/discover`, world.alice, {
      provider: 's3',
      credentials: { ...admin, endpoint: 'not a url' },
    }),
    400,
    'body.credentials.endpoint: must be an http or https URL',
  );
  const discover = (credentials: unknown, provider = 'azure') =>
    api('POST', `${url}/discover`, world.alice, { provider, credentials });
  expectError(
    t,
    await discover({ accountName: 'photos1' }),
    400,
    /body.credentials: must hold an accountKey or a sasToken \(one of them\)/,
  );
  expectError(
    t,
    await discover({ accountName: 'photos1', accountKey: 'a2V5', sasToken: 'sv=1&sig=2' }),
    400,
    /body.credentials: must hold an accountKey or a sasToken/,
  );
  expectError(
    t,
    await discover({ accountName: 'Photos_1', accountKey: 'a2V5' }),
    400,
    /body.credentials.accountName: must be a storage account name/,
  );
  expectError(
    t,
    await discover({ accountName: 'photos1', accountKey: 'not base64!' }),
    400,
    /body.credentials.accountKey/,
  );
  expectError(
    t,
    await discover({ accountName: 'photos1', accountKey: 'a2V5', endpoint: 'http://127.0.0.1:10000/a?sv=1' }),
    400,
    /body.credentials.endpoint: must be the blob service address/,
  );
  expectError(
    t,
    await discover({}, 'gcs'),
    400,
    /body.credentials: must hold a serviceAccountKey, or an hmacAccessId and hmacSecret/,
  );
  expectError(
    t,
    await discover({ hmacAccessId: 'GOOG1E' }, 'gcs'),
    400,
    /body.credentials: must hold a serviceAccountKey/,
  );
  const serviceAccountKey = {
    client_email: 'reader@photos-project.iam.gserviceaccount.com',
    private_key: 'not a key',
    project_id: 'photos-project',
  };
  expectError(
    t,
    await discover({ serviceAccountKey }, 'gcs'),
    400,
    /body.credentials.serviceAccountKey.private_key: must be the PEM private key/,
  );
  const unusable = await discover(
    {
      serviceAccountKey: {
        ...serviceAccountKey,
        private_key: '-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n',
      },
    },
    'gcs',
  );
  expectError(t, unusable, 400, 'credentials.serviceAccountKey.private_key: not a usable RSA private key');
});

t.test('connect, list, browse, update and disconnect', async (t) => {
  const connected = await api<Integration>('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: readerCredentials,
    targets: ['photos'],
  });
  t.equal(connected.status, 201);
  t.strictSame(Object.keys(connected.body).sort(), [
    'createdAt',
    'credentialIdentity',
    'id',
    'processing',
    'provider',
    'targets',
  ]);
  t.match(connected.body, {
    provider: 's3',
    credentialIdentity: reader.accessKeyId,
    targets: ['photos'],
    processing: true,
  });
  const id = connected.body.id;

  const listed = await api<{ integrations: Integration[] }>('GET', '/api/integrations/buckets', world.alice);
  t.strictSame(listed.body.integrations, [connected.body]);
  t.notMatch(JSON.stringify(listed.body), reader.secretAccessKey, 'no secret in the list');

  const [row] = await rows();
  t.equal(row.workspace_id, (await world.server.services().account.findWorkspace('alice')).id);
  t.ok(Buffer.isBuffer(row.credentials) && row.credentials.length > 0, 'a ciphertext is stored');
  t.notOk(row.credentials.includes(reader.secretAccessKey), 'not the secret');
  t.notOk(row.credentials.includes(reader.accessKeyId), 'nor anything else of the credentials in the clear');
  t.match(row.credentials_key_id, /^[0-9a-f]{16}$/);

  const objects = (query: string) =>
    api<{ entries: { key: string }[] }>('GET', `/api/integrations/buckets/${id}/objects?${query}`, world.alice);
  const top = await objects('target=photos');
  // What browsing answers (folders, names, paging) is the contract every provider keeps: test/helpers/storage-contract.ts.
  t.strictSame(
    [top.status, top.body.entries.map((entry) => entry.key)],
    [200, ['train/', 'val/', 'cover.jpg']],
    'a reader browses its bucket',
  );

  expectError(t, await objects('target=private'), 404, /not a bucket of storage integration/);
  expectError(t, await objects(''), 400, /query.target/);
  expectError(t, await objects('target=photos&limit=0'), 400, /query.limit/);

  const updated = await api<Integration>('PATCH', `/api/integrations/buckets/${id}`, world.alice, {
    processing: false,
  });
  t.equal(updated.status, 200);
  t.strictSame(updated.body, { ...connected.body, processing: false });
  expectError(
    t,
    await api('PATCH', `/api/integrations/buckets/${id}`, world.alice, { processing: 'no' }),
    400,
    /body.processing/,
  );

  const gone = await api('DELETE', `/api/integrations/buckets/${id}`, world.alice);
  t.strictSame([gone.status, gone.body], [200, { success: true }]);
  t.strictSame((await api('GET', '/api/integrations/buckets', world.alice)).body, { integrations: [] });
  expectError(t, await objects('target=photos'), 404);
  t.strictSame(await rows(), [], 'the credentials are deleted');
});

t.test('another workspace neither sees nor touches an integration', async (t) => {
  const connected = await api<Integration>('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: admin,
    targets: ['photos'],
  });
  const id = connected.body.id;
  t.strictSame((await api('GET', '/api/integrations/buckets', world.bobby)).body, { integrations: [] });
  t.strictSame(
    (await api('GET', '/api/integrations/buckets', world.team)).body,
    { integrations: [] },
    "alice's team is another workspace",
  );
  expectError(t, await api('GET', `/api/integrations/buckets/${id}/objects?target=photos`, world.bobby), 404);
  expectError(t, await api('PATCH', `/api/integrations/buckets/${id}`, world.bobby, { processing: false }), 404);
  expectError(t, await api('DELETE', `/api/integrations/buckets/${id}`, world.bobby), 404);
  t.match(
    (await api<{ integrations: Integration[] }>('GET', '/api/integrations/buckets', world.alice)).body.integrations,
    [{ id, processing: true }],
    'untouched',
  );
  // Ingest by reference: another workspace's integration is not found; one's own is queued (test/ingest-reference.test.ts).
  await createDataset(world, world.bobby, { dataset: 'by-reference', name: 'By reference' });
  await createDataset(world, world.alice, { dataset: 'by-reference', name: 'By reference' });
  const reference = { provider: 'cloud', integrationId: id, target: 'photos', prefix: 'train/' };
  expectError(
    t,
    await api('POST', '/api/datasets/bobby/by-reference/ingest', world.bobby, { reference }),
    404,
    /integration/,
  );
  t.equal((await api('POST', '/api/datasets/alice/by-reference/ingest', world.alice, { reference })).status, 201);
  await api('DELETE', `/api/integrations/buckets/${id}`, world.alice);
});

t.test('discover and connect need admin; list and browse need editor', async (t) => {
  const connected = await api<Integration>('POST', '/api/integrations/buckets', world.team, {
    provider: 's3',
    credentials: admin,
    targets: ['photos'],
  });
  t.equal(connected.status, 201, 'the team owner connects');
  const id = connected.body.id;
  for (const key of [world.editor, world.viewer]) {
    expectError(
      t,
      await api('POST', '/api/integrations/buckets/discover', key, { provider: 's3', credentials: admin }),
      403,
    );
    expectError(
      t,
      await api('POST', '/api/integrations/buckets', key, { provider: 's3', credentials: admin, targets: ['photos'] }),
      403,
    );
    expectError(t, await api('PATCH', `/api/integrations/buckets/${id}`, key, { processing: false }), 403);
    expectError(t, await api('DELETE', `/api/integrations/buckets/${id}`, key), 403);
  }
  t.equal((await api('GET', '/api/integrations/buckets', world.editor)).status, 200, 'an editor lists');
  t.equal(
    (await api('GET', `/api/integrations/buckets/${id}/objects?target=photos`, world.editor)).status,
    200,
    'an editor browses',
  );
  expectError(t, await api('GET', '/api/integrations/buckets', world.viewer), 403);
  expectError(t, await api('GET', `/api/integrations/buckets/${id}/objects?target=photos`, world.viewer), 403);
  expectError(t, await call(world.server, 'GET', '/api/integrations/buckets'), 401);
  await api('DELETE', `/api/integrations/buckets/${id}`, world.team);
});

t.test('an endpoint on an address the operator did not allow is refused before any request', async (t) => {
  const closed = await startWorld(t);
  const refused = await call(closed.server, 'POST', '/api/integrations/buckets/discover', {
    key: closed.alice,
    body: { provider: 's3', credentials: admin },
  });
  expectError(
    t,
    refused,
    400,
    /credentials.endpoint: 127.0.0.1 is not a public address \(loopback\); an operator allows on-premise storage with OUTBOUND_ALLOWED_NETWORKS/,
  );
});

t.test('key rotation: vpctl integrations reseal moves the credentials to the new secret', async (t) => {
  const connected = await api<Integration>('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: admin,
    targets: ['photos'],
  });
  const id = connected.body.id;
  const [before] = await rows();
  const newSecret = randomBytes(32).toString('hex');
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-reseal-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const reseal = await runNode(
    [
      'installer/src/vpctl.ts',
      'integrations',
      'reseal',
      '--previous-secret-file',
      join(world.server.dataDir, 'signing-secret'),
    ],
    {
      DATABASE_URL: world.server.databaseUrl,
      DATA_DIR: dataDir,
      SIGNING_SECRET: newSecret,
    },
  );
  t.equal(reseal.code, 0, reseal.stderr);
  t.equal(reseal.stdout, 'Re-sealed 1 integration under the current secret\n');
  const [after] = await rows();
  t.not(after.credentials_key_id, before.credentials_key_id, 'sealed under another key');
  t.notOk(after.credentials.includes(s3.secretAccessKey));

  const browse = (server: { url: string }) =>
    call(server, 'GET', `/api/integrations/buckets/${id}/objects?target=photos`, { key: world.alice });
  expectError(t, await browse(world.server), 409, /cannot be read .*vpctl integrations reseal/);
  const rotated = await startTestServer(t, {
    databaseUrl: world.server.databaseUrl,
    env: { SIGNING_SECRET: newSecret, OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' },
  });
  t.equal((await browse(rotated)).status, 200, 'a control plane with the new secret reads them');

  const again = await runNode(
    [
      'installer/src/vpctl.ts',
      'integrations',
      'reseal',
      '--previous-secret-file',
      join(world.server.dataDir, 'signing-secret'),
    ],
    {
      DATABASE_URL: world.server.databaseUrl,
      DATA_DIR: dataDir,
      SIGNING_SECRET: newSecret,
    },
  );
  t.equal(again.stdout, 'Re-sealed 0 integrations under the current secret\n', 'nothing left to re-seal');
  await api('DELETE', `/api/integrations/buckets/${id}`, world.alice);
});

t.test('the secrets never reach the log', async (t) => {
  const text = logs.text();
  t.ok(text.includes('/api/integrations/buckets'), 'the requests were logged');
  for (const secret of [s3.secretAccessKey, reader.secretAccessKey])
    t.notOk(text.includes(secret), 'no secret in the log');
});
