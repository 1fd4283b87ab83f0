import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { queryInt } from '../validation/integers.ts';

/** S3 bucket naming rules (3-63 lowercase letters, digits, dots, hyphens), which S3-compatible servers share. */
export const BucketName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens');

/** Printable ASCII without spaces: what an access key id and a session token are, and what may go into a header. */
const Token = (max: number) => z.string().min(1).max(max).regex(/^[\x21-\x7e]+$/, 'must be printable ASCII characters without spaces');

export const S3Credentials = z.strictObject({
  accessKeyId: Token(128),
  secretAccessKey: z.string().min(1).max(256).meta({ description: 'Stored encrypted; never returned or logged' }),
  sessionToken: Token(4096).optional().meta({ description: 'For temporary credentials' }),
  region: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/, 'must be a region name such as us-east-1')
    .default('us-east-1'),
  endpoint: z
    .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
    .max(2048)
    // URL.parse: this check runs on a value the URL check refused too.
    .refine((url) => { const parsed = URL.parse(url); return !parsed || (parsed.pathname === '/' && !parsed.search && !parsed.username && !parsed.password); }, 'must be the service address only (no path, query or user)')
    .optional()
    .meta({ description: "An S3-compatible service (MinIO, Ceph RGW...); absent: AWS's endpoint for the region" }),
  forcePathStyle: z
    .boolean()
    .optional()
    .meta({ description: 'Address buckets as a path (endpoint/bucket) rather than a host name; default: true with an endpoint, false without' }),
});
export type S3Credentials = z.output<typeof S3Credentials>;

const S3Source = { provider: z.literal('s3'), credentials: S3Credentials };

export const DiscoverBody = z.discriminatedUnion('provider', [z.strictObject(S3Source)], {
  error: 'provider: must be s3 (GCS, Azure and local folders are not available on this appliance yet)',
});

export type DiscoverBody = z.output<typeof DiscoverBody>;

export const ConnectBody = z.discriminatedUnion(
  'provider',
  [z.strictObject({ ...S3Source, targets: z.array(BucketName).min(1).max(100).meta({ description: 'The buckets to connect; each is checked to be readable' }) })],
  { error: 'provider: must be s3 (GCS, Azure and local folders are not available on this appliance yet)' },
);
export type ConnectBody = z.output<typeof ConnectBody>;

export const DiscoverResult = z.object({ targets: z.array(z.string()).meta({ description: 'Buckets these credentials can list' }) });

export const Integration = z.object({
  id: z.string(),
  provider: z.enum(['gcs', 's3', 'azure']),
  credentialIdentity: z.string().meta({ description: 'Who the credentials are (an access key id); the credentials are never returned' }),
  targets: z.array(z.string()),
  processing: z.boolean().meta({ description: "AI features may read this storage's images" }),
  createdAt: z.iso.datetime(),
});
export type IntegrationView = z.input<typeof Integration>;

export const IntegrationList = z.object({ integrations: z.array(Integration) });

export const IntegrationPath = z.strictObject({ id: ObjectId });

export const IntegrationPatch = z.strictObject({
  processing: z.boolean().meta({ description: 'Turn AI features on or off: smart annotation, auto-annotation, similar-image search, dataset analysis, training' }),
});

export const DisconnectResult = z.object({ success: z.literal(true) });

export const MAX_PAGE = 1000;

export const ObjectsQuery = z.object({
  target: z.string().min(1).max(255).meta({ description: 'A bucket of the integration' }),
  prefix: z.string().max(1024).default('').meta({ description: 'Folder prefix, ending in / (empty: the top)' }),
  cursor: z.string().min(1).max(4096).optional().meta({ description: "The previous page's cursor" }),
  limit: queryInt().min(1).max(MAX_PAGE).default(MAX_PAGE).meta({ description: `Entries per page, at most ${MAX_PAGE}` }),
});
export type ObjectsQuery = z.output<typeof ObjectsQuery>;

export const ObjectPage = z.object({
  entries: z.array(
    z.object({
      kind: z.enum(['folder', 'file']),
      name: z.string(),
      key: z.string().meta({ description: "The object's key; a folder's ends in / and is its prefix" }),
      size: z.number().optional(),
      updatedAt: z.string().optional(),
    }),
  ),
  cursor: z.string().optional().meta({ description: 'Present when there is another page' }),
});
