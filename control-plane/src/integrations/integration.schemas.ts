import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { queryInt } from '../validation/integers.ts';

/** S3 bucket naming rules (3-63 lowercase letters, digits, dots, hyphens), which S3-compatible servers share. */
export const BucketName = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
    'must be a bucket name: 3-63 lowercase letters, digits, dots and hyphens',
  );

/** GCS bucket naming rules: as S3's, and underscores too, up to 222 characters when dotted. */
const GcsBucketName = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/,
    'must be a bucket name: 3-222 lowercase letters, digits, dots, hyphens and underscores',
  );

/** Printable ASCII without spaces: what an access key id and a session token are, and what may go into a header. */
const Token = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII characters without spaces');

const HttpUrl = z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(2048);

/** A service's address alone: its requests' paths are the provider's to make. */
const ServiceAddress = HttpUrl
  // URL.parse: this check runs on a value the URL check refused too.
  .refine((url) => {
    const parsed = URL.parse(url);
    return !parsed || (parsed.pathname === '/' && !parsed.search && !parsed.username && !parsed.password);
  }, 'must be the service address only (no path, query or user)');

export const S3Credentials = z.strictObject({
  accessKeyId: Token(128),
  secretAccessKey: z.string().min(1).max(256).meta({ description: 'Stored encrypted; never returned or logged' }),
  sessionToken: Token(4096).optional().meta({ description: 'For temporary credentials' }),
  region: z
    .string()
    .regex(/^[a-z0-9-]{1,32}$/, 'must be a region name such as us-east-1')
    .default('us-east-1'),
  endpoint: ServiceAddress.optional().meta({
    description: "An S3-compatible service (MinIO, Ceph RGW...); absent: AWS's endpoint for the region",
  }),
  forcePathStyle: z.boolean().optional().meta({
    description:
      'Address buckets as a path (endpoint/bucket) rather than a host name; default: true with an endpoint, false without',
  }),
});
export type S3Credentials = z.output<typeof S3Credentials>;

/** The fields of a service account's JSON key file that are used; paste the whole file, the rest is dropped. */
const ServiceAccountKey = z
  .object({
    client_email: z.email().max(320),
    private_key: z
      .string()
      .min(1)
      .max(8192)
      .regex(/-----BEGIN PRIVATE KEY-----/, 'must be the PEM private key of a service account key file')
      .meta({ description: 'Stored encrypted; never returned or logged' }),
    project_id: z
      .string()
      .regex(/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/, 'must be a project id')
      .meta({ description: 'Whose buckets discover lists' }),
    token_uri: HttpUrl.optional().meta({
      description: "Where a signed assertion is exchanged for an access token; absent: Google's",
    }),
  })
  .meta({ description: "A service account's JSON key file (IAM > Service accounts > Keys), as downloaded" });

const GcsEndpoint = ServiceAddress.optional().meta({
  description: "The storage service (an emulator, a private endpoint); absent: Google's",
});

export const GcsCredentials = z.union(
  [
    z.strictObject({ serviceAccountKey: ServiceAccountKey, endpoint: GcsEndpoint }).meta({
      description:
        'Service account key: a JWT signed with the private key is exchanged for a read-only access token; the JSON API is used',
    }),
    z
      .strictObject({
        hmacAccessId: Token(128).meta({
          description: "An HMAC key's access id (Cloud Storage > Settings > Interoperability)",
        }),
        hmacSecret: z.string().min(1).max(256).meta({ description: 'Stored encrypted; never returned or logged' }),
        endpoint: GcsEndpoint,
      })
      .meta({ description: 'HMAC key: requests are signed as S3 does (SigV4) and sent to the XML API' }),
  ],
  { error: 'must hold a serviceAccountKey, or an hmacAccessId and hmacSecret' },
);
export type GcsCredentials = z.output<typeof GcsCredentials>;

export const AzureCredentials = z
  .strictObject({
    accountName: z
      .string()
      .regex(/^[a-z0-9]{3,24}$/, 'must be a storage account name: 3-24 lowercase letters and digits'),
    accountKey: z.base64().min(1).max(256).optional().meta({
      description:
        "One of the account's access keys (Shared Key authorization); stored encrypted, never returned or logged",
    }),
    sasToken: Token(4096)
      .transform((token) => token.replace(/^\?/, ''))
      .optional()
      .meta({
        description:
          'Instead of a key: a shared access signature (an account SAS with list and read lets discover list containers); stored encrypted, never returned or logged',
      }),
    endpoint: HttpUrl.refine((url) => {
      const parsed = URL.parse(url);
      return !parsed || (!parsed.search && !parsed.username && !parsed.password);
    }, 'must be the blob service address (no query or user)')
      .optional()
      .meta({
        description:
          'The blob service (Azure Stack, a private endpoint; Azurite: http://host:10000/devstoreaccount1); absent: https://<accountName>.blob.core.windows.net',
      }),
  })
  .refine(
    (credentials) => (credentials.accountKey === undefined) !== (credentials.sasToken === undefined),
    'must hold an accountKey or a sasToken (one of them)',
  );
export type AzureCredentials = z.output<typeof AzureCredentials>;

export const LocalCredentials = z.strictObject({
  keyId: ObjectId.meta({
    description:
      "The worker host whose agent reads the folders (the host's id): one of the workspace's hosts or of the shared pool",
  }),
});
export type LocalCredentials = z.output<typeof LocalCredentials>;

/** A folder on a worker host: an absolute path, which its agent checks against the folders it shares. */
export const FolderPath = z
  .string()
  .max(1024)
  .regex(/^\/[^\0]*$/, 'must be an absolute path on the host, such as /data/images');

const S3Source = { provider: z.literal('s3'), credentials: S3Credentials };
const GcsSource = { provider: z.literal('gcs'), credentials: GcsCredentials };
const AzureSource = { provider: z.literal('azure'), credentials: AzureCredentials };
const LocalSource = { provider: z.literal('local'), credentials: LocalCredentials };
const UNKNOWN_PROVIDER = 'provider: must be s3, gcs, azure or local';

export const DiscoverBody = z.discriminatedUnion(
  'provider',
  [z.strictObject(S3Source), z.strictObject(GcsSource), z.strictObject(AzureSource), z.strictObject(LocalSource)],
  { error: UNKNOWN_PROVIDER },
);
export type DiscoverBody = z.output<typeof DiscoverBody>;

const targetsOf = (name: z.ZodString) => ({
  targets: z
    .array(name)
    .min(1)
    .max(100)
    .meta({ description: 'The buckets (containers) to connect; each is checked to be readable' }),
});

export const ConnectBody = z.discriminatedUnion(
  'provider',
  [
    z.strictObject({ ...S3Source, ...targetsOf(BucketName) }),
    z.strictObject({ ...GcsSource, ...targetsOf(GcsBucketName) }),
    z.strictObject({ ...AzureSource, ...targetsOf(BucketName) }),
    z.strictObject({
      ...LocalSource,
      targets: z.array(FolderPath).min(1).max(100).meta({
        description: 'Folders the host shares (or folders inside them) to connect; each is checked to be readable',
      }),
    }),
  ],
  { error: UNKNOWN_PROVIDER },
);
export type ConnectBody = z.output<typeof ConnectBody>;

export const DiscoverResult = z.object({
  targets: z
    .array(z.string())
    .meta({ description: 'Buckets these credentials can list; for local, the folders the host shares' }),
});

export const Integration = z.object({
  id: z.string(),
  provider: z.enum(['gcs', 's3', 'azure', 'local']),
  credentialIdentity: z.string().meta({
    description:
      "Who the credentials are (an access key id, a service account's email, a storage account name; for local, the host's id); the credentials are never returned",
  }),
  targets: z.array(z.string()),
  processing: z.boolean().meta({ description: "AI features may read this storage's images" }),
  createdAt: z.iso.datetime(),
});
export type IntegrationView = z.input<typeof Integration>;

export const IntegrationList = z.object({ integrations: z.array(Integration) });

export const IntegrationPath = z.strictObject({ id: ObjectId });

export const IntegrationPatch = z.strictObject({
  processing: z.boolean().meta({
    description:
      'Turn AI features on or off: smart annotation, auto-annotation, similar-image search, dataset analysis, training',
  }),
});

export const DisconnectResult = z.object({ success: z.literal(true) });

export const MAX_PAGE = 1000;

export const ObjectsQuery = z.object({
  target: z.string().min(1).max(1024).meta({ description: 'A bucket (for local, a folder) of the integration' }),
  prefix: z.string().max(1024).default('').meta({ description: 'Folder prefix, ending in / (empty: the top)' }),
  cursor: z.string().min(1).max(4096).optional().meta({ description: "The previous page's cursor" }),
  limit: queryInt()
    .min(1)
    .max(MAX_PAGE)
    .default(MAX_PAGE)
    .meta({ description: `Entries per page, at most ${MAX_PAGE}` }),
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
