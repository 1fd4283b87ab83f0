// The GCS provider through the contract every storage provider keeps: with a service account key against
// fake-gcs-server (JSON API; the RS256 assertion verified by the test's token endpoint), and with an HMAC key
// through GCS's S3-interoperable XML API against the S3 test server (which checks the SigV4 signatures).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import t from 'tap';
import { GcsProvider } from '../control-plane/src/integrations/providers/gcs.ts';
import { OutboundPolicy } from '../control-plane/src/net/outbound-policy.ts';
import { startGcs } from './helpers/gcs-server.ts';
import { s3Writer, startS3Server } from './helpers/s3-server.ts';
import { storageContract } from './helpers/storage-contract.ts';

await t.test('with a service account key (JSON API)', async (t) => {
  const gcs = await startGcs(t);
  const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
  await storageContract(t, {
    provider: 'gcs',
    bucket: 'with_service-account', // GCS allows underscores, S3 does not
    credentials: { serviceAccountKey: gcs.serviceAccountKey, endpoint: gcs.endpoint },
    wrongCredentials: {
      serviceAccountKey: { ...gcs.serviceAccountKey, private_key: otherKey },
      endpoint: gcs.endpoint,
    },
    wrongCredentialsError:
      /^GCS at 127\.0\.0\.1:\d+ could not get an access token for reader-\w+@vp-test-project\.iam\.gserviceaccount\.com \(HTTP 400\): check credentials\.serviceAccountKey/,
    atEndpoint: (endpoint) => ({ serviceAccountKey: gcs.serviceAccountKey, endpoint }),
    identity: gcs.serviceAccountKey.client_email,
    secrets: [gcs.serviceAccountKey.private_key.split('\n')[1]],
    createBucket: (name) => gcs.createBucket(name),
    put: (bucket, key, bytes) => gcs.put(bucket, key, bytes),
  });
  t.equal(gcs.tokensIssued(), 1, 'one access token, from the token endpoint, reused by every request');

  // A token revoked before it expires is a 401: it is dropped and the request sent again with a new one.
  gcs.revokeTokens();
  const provider = new GcsProvider(new OutboundPolicy(['127.0.0.1/32']));
  const credentials = { serviceAccountKey: gcs.serviceAccountKey, endpoint: gcs.endpoint };
  const listed = await provider.list(credentials, { target: 'with_service-account', prefix: 'val/' });
  t.strictSame(
    listed.objects.map((object) => object.key),
    ['val/a b&c.jpg', 'val/deep/x.jpg'],
    'listed with a new token',
  );
  t.equal(gcs.tokensIssued(), 2, 'one new token');
  gcs.revokeTokens();
  const read = await provider.read(credentials, {
    target: 'with_service-account',
    key: 'val/deep/x.jpg',
    maxBytes: 1024,
  });
  t.equal(Buffer.concat(await read.toArray()).toString(), 'bytes of val/deep/x.jpg', 'a read too');
  t.equal(gcs.tokensIssued(), 3);

  // A name's `.` and `..` segments are its own (the JSON API carries a name as one path segment, its slashes encoded):
  // each such object reads as itself, never as the object the segments resolve to. Only names that are `.` or `..`
  // themselves would be resolved, and GCS allows no such name: a listing that names one is refused its read.
  const keys = ['dots/../val/deep/x.jpg', 'dots/./cover.jpg', 'dots/a/../../cover.jpg', '..'];
  for (const key of keys) await gcs.put('with_service-account', key, Buffer.from(`bytes of ${key}`));
  const dots = await provider.list(credentials, { target: 'with_service-account', prefix: 'dots/' });
  t.strictSame(
    dots.objects.map((object) => object.key),
    keys.slice(0, 3).sort(),
    'listed as named',
  );
  for (const object of dots.objects) {
    const bytes = Buffer.concat(
      await (
        await provider.read(credentials, {
          target: 'with_service-account',
          key: object.key,
          maxBytes: 1024,
          ifVersion: object.version,
        })
      ).toArray(),
    );
    t.equal(bytes.toString(), `bytes of ${object.key}`, `${object.key} read as itself`);
  }
  const dotDot = await provider.read(credentials, { target: 'with_service-account', key: '..', maxBytes: 1024 }).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.match(dotDot, {
    kind: 'rejected',
    message:
      /^GCS at 127\.0\.0\.1:\d+ could not read \.\. of bucket with_service-account: GCS resolves \. and \.\. path segments, so a name holding one would name another object$/,
  });
});

await t.test('with an HMAC key (XML API, SigV4)', async (t) => {
  const s3 = await startS3Server(t);
  await storageContract(t, {
    provider: 'gcs',
    bucket: 'with-hmac',
    credentials: { hmacAccessId: s3.accessKeyId, hmacSecret: s3.secretAccessKey, endpoint: s3.endpoint },
    wrongCredentials: {
      hmacAccessId: s3.accessKeyId,
      hmacSecret: randomBytes(20).toString('hex'),
      endpoint: s3.endpoint,
    },
    wrongCredentialsError:
      /^GCS at 127\.0\.0\.1:\d+ refused these credentials to (list the buckets|list bucket with-hmac) \(HTTP 403\)$/,
    atEndpoint: (endpoint) => ({ hmacAccessId: s3.accessKeyId, hmacSecret: s3.secretAccessKey, endpoint }),
    identity: s3.accessKeyId,
    secrets: [s3.secretAccessKey],
    ...s3Writer(t, s3),
  });
});
