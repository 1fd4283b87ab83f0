// The S3 provider through the contract every storage provider keeps, against the S3 test server (SeaweedFS, which
// checks SigV4). test/integrations.test.ts covers the API's own rules (roles, workspaces, input, key rotation).
import t from 'tap';
import { s3Writer, startS3Server } from './helpers/s3-server.ts';
import { storageContract } from './helpers/storage-contract.ts';

const s3 = await startS3Server(t);
await storageContract(t, {
  provider: 's3',
  bucket: 'contract',
  credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, endpoint: s3.endpoint, region: 'us-east-1' },
  wrongCredentials: { accessKeyId: s3.accessKeyId, secretAccessKey: 'not-the-secret', endpoint: s3.endpoint, region: 'us-east-1' },
  wrongCredentialsError: /^S3 at 127\.0\.0\.1:\d+ refused these credentials to (list the buckets|list bucket contract) \(HTTP 403\)$/,
  atEndpoint: (endpoint) => ({ accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, endpoint, region: 'us-east-1' }),
  identity: s3.accessKeyId,
  secrets: [s3.secretAccessKey],
  ...s3Writer(t, s3),
});
