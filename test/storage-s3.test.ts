// The S3 provider through the contract every storage provider keeps, against the S3 test server (SeaweedFS, which
// checks SigV4). test/integrations.test.ts covers the API's own rules (roles, workspaces, input, key rotation).
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import t from 'tap';
import { S3Provider } from '../control-plane/src/integrations/providers/s3.ts';
import { OutboundPolicy } from '../control-plane/src/net/outbound-policy.ts';
import { s3Writer, startS3Server } from './helpers/s3-server.ts';
import { recordingProxy, storageContract } from './helpers/storage-contract.ts';

const s3 = await startS3Server(t);
await storageContract(t, {
  provider: 's3',
  bucket: 'contract',
  credentials: {
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    endpoint: s3.endpoint,
    region: 'us-east-1',
  },
  wrongCredentials: {
    accessKeyId: s3.accessKeyId,
    secretAccessKey: 'not-the-secret',
    endpoint: s3.endpoint,
    region: 'us-east-1',
  },
  wrongCredentialsError:
    /^S3 at 127\.0\.0\.1:\d+ refused these credentials to (list the buckets|list bucket contract) \(HTTP 403\)$/,
  atEndpoint: (endpoint) => ({
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    endpoint,
    region: 'us-east-1',
  }),
  identity: s3.accessKeyId,
  secrets: [s3.secretAccessKey],
  ...s3Writer(t, s3),
});

// S3 names objects by keys whose `.` and `..` segments are their own (AWS resolves none): a key is sent as AWS's own
// client sends it, where URL parsing would have read another object (`photos/../other/x.jpg` as other/x.jpg).
await t.test("a key's . and .. segments reach the service as AWS's own client sends them", async (t) => {
  const proxy = await recordingProxy(t, new URL(s3.endpoint));
  const credentials = {
    accessKeyId: s3.accessKeyId,
    secretAccessKey: s3.secretAccessKey,
    endpoint: proxy.endpoint,
    region: 'us-east-1',
  };
  const aws = new S3Client({
    endpoint: proxy.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: s3,
    maxAttempts: 1,
  });
  t.teardown(() => aws.destroy());
  const provider = new S3Provider(new OutboundPolicy(['127.0.0.1/32']));
  for (const key of ['photos/../other/x.jpg', './cover.jpg', 'a/./b/../../c.jpg', '..']) {
    const sent = proxy.paths.length;
    await aws.send(new GetObjectCommand({ Bucket: 'contract', Key: key })).catch(() => undefined);
    await provider.read(credentials, { target: 'contract', key, maxBytes: 1024 }).catch(() => undefined);
    const [byAws, byProvider] = proxy.paths.slice(sent);
    t.equal(byAws, `/contract/${key}`, `AWS's client sends ${key} as it is`);
    t.equal(byProvider, byAws, 'and so does the provider');
  }
});
