import { createHash, createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { OutboundPolicy } from '../../net/guarded-fetch.ts';
import type { S3Credentials } from '../integration.schemas.ts';
import { ProviderHttp, readableTargets, type Service } from './http.ts';
import { isoTime, objectPage } from './page.ts';
import type {
  BrowseRequest,
  ListRequest,
  ObjectPage,
  ReadRequest,
  StorageProvider,
  StoredObjectPage,
} from './provider.ts';
import { encode, setQuery } from './query.ts';
import { elements, text, type XmlElement } from './xml.ts';

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/**
 * S3 and S3-compatible services (MinIO, Ceph RGW, SeaweedFS). Requests are signed here (SigV4) and sent through
 * the guarded fetcher, so an endpoint on a loopback or private address is refused unless the operator allowed
 * its network (OUTBOUND_ALLOWED_NETWORKS), like every other request the appliance makes for a user.
 */
export class S3Provider implements StorageProvider<S3Credentials> {
  private readonly http: ProviderHttp;

  /** `service`: GCS's XML API speaks S3 too, and its errors say GCS. */
  constructor(
    policy: OutboundPolicy,
    service: Service = { name: 'S3', missing: 'no such bucket', check: 'credentials.region and credentials.endpoint' },
  ) {
    this.http = new ProviderHttp(policy, { ...service, keepsDotSegments: true });
  }

  identity(credentials: S3Credentials): string {
    return credentials.accessKeyId;
  }

  async discover(credentials: S3Credentials): Promise<string[]> {
    const listing = await this.get(credentials, undefined, {}, 'list the buckets');
    const names = elements(listing, 'Bucket')
      .map((bucket) => text(bucket, 'Name') ?? '')
      .filter(Boolean);
    return readableTargets(names, (name) => this.checkTarget(credentials, name));
  }

  async checkTarget(credentials: S3Credentials, target: string): Promise<void> {
    await this.get(credentials, target, { 'list-type': '2', 'max-keys': '1' }, `list bucket ${target}`);
  }

  async browse(credentials: S3Credentials, request: BrowseRequest): Promise<ObjectPage> {
    const query: Record<string, string> = {
      ...LISTING,
      delimiter: '/',
      prefix: request.prefix,
      'max-keys': String(request.limit),
    };
    if (request.cursor) query['continuation-token'] = request.cursor;
    const listing = await this.get(credentials, request.target, query, `list bucket ${request.target}`);
    const key = keyReader(listing);
    const folders = elements(listing, 'CommonPrefixes').map((entry) => key(entry, 'Prefix'));
    const files = elements(listing, 'Contents').map((entry) => ({
      key: key(entry, 'Key'),
      size: Number(text(entry, 'Size') ?? 0),
      updatedAt: text(entry, 'LastModified'),
    }));
    return objectPage(
      request.prefix,
      folders,
      files,
      text(listing, 'IsTruncated') === 'true' ? text(listing, 'NextContinuationToken') : undefined,
    );
  }

  async list(credentials: S3Credentials, request: ListRequest): Promise<StoredObjectPage> {
    const query: Record<string, string> = {
      ...LISTING,
      prefix: request.prefix,
      'max-keys': String(request.limit ?? 1000),
    };
    if (request.cursor) query['continuation-token'] = request.cursor;
    const listing = await this.get(credentials, request.target, query, `list bucket ${request.target}`);
    const key = keyReader(listing);
    const objects = elements(listing, 'Contents')
      .map((entry) => ({
        key: key(entry, 'Key'),
        size: Number(text(entry, 'Size') ?? 0),
        version: text(entry, 'ETag') ?? '',
        updatedAt: isoTime(text(entry, 'LastModified')),
      }))
      .filter((object) => object.key && !object.key.endsWith('/'));
    const cursor = text(listing, 'IsTruncated') === 'true' ? text(listing, 'NextContinuationToken') : undefined;
    return { objects, cursor: cursor || undefined };
  }

  async read(credentials: S3Credentials, request: ReadRequest): Promise<Readable> {
    const { url, path } = address(credentials, request.target, request.key);
    // If-Match is not signed (SigV4 signs the headers it lists), so it travels beside the signature.
    const headers = {
      ...signV4(credentials, url, path),
      ...(request.ifVersion ? { 'if-match': request.ifVersion } : {}),
    };
    return this.http.stream(
      { url, path, headers, what: `read ${request.key} of bucket ${request.target}`, missing: 'no such object' },
      request.maxBytes,
      request.signal,
    );
  }

  /** A signed GET of the service (no bucket) or of a bucket, answered with an XML listing. */
  private async get(
    credentials: S3Credentials,
    bucket: string | undefined,
    query: Record<string, string>,
    what: string,
  ): Promise<XmlElement> {
    const { url, path } = address(credentials, bucket);
    setQuery(url, Object.entries(query));
    return this.http.xml({ url, path, headers: signV4(credentials, url, path), what });
  }
}

/**
 * ListObjectsV2 with keys URL-encoded in the answer: a key may hold characters XML 1.0 cannot carry (control
 * characters), which a plain listing garbles, so the key read back would name another object.
 */
const LISTING = { 'list-type': '2', 'encoding-type': 'url' };

/** Reads a key (or prefix) of a listing: URL-decoded (form style, + for space) when the service says it encoded them. */
function keyReader(listing: XmlElement): (entry: XmlElement, name: string) => string {
  const encoded = text(listing, 'EncodingType') === 'url';
  return (entry, name) => {
    const value = text(entry, name) ?? '';
    if (!encoded) return value;
    try {
      return decodeURIComponent(value.replaceAll('+', ' '));
    } catch {
      return value; // not percent-encoding after all: kept as sent, and a read of it says whether it exists
    }
  };
}

/**
 * Where a request for the service, a bucket or one of its objects goes: the URL (its host; the query is set on it) and
 * the path, each segment RFC 3986-encoded, sent and signed exactly so. S3 takes a key's `.` and `..` segments as part
 * of its name and resolves none: `a/../b.jpg` is its own object, never b.jpg (nor `../other/key` another bucket's).
 */
function address(credentials: S3Credentials, bucket?: string, key?: string): { url: URL; path: string } {
  const url = new URL('/', credentials.endpoint ?? `https://s3.${credentials.region}.amazonaws.com`);
  const pathStyle = credentials.forcePathStyle ?? credentials.endpoint !== undefined;
  if (bucket && !pathStyle) url.hostname = `${bucket}.${url.hostname}`;
  const segments = [...(bucket && pathStyle ? [bucket] : []), ...(key === undefined ? [] : key.split('/'))];
  return { url, path: `/${segments.map(encode).join('/')}` };
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Signing keys by secret, day and region: deriving one takes four HMACs, which were most of what signing cost an
 * indexing (one signed read per object). A day's key serves every request of that day, as AWS's SDKs keep it.
 */
const signingKeys = new Map<string, Buffer>();
const SIGNING_KEYS_KEPT = 64;

function signingKey(secretAccessKey: string, day: string, region: string): Buffer {
  const id = `${day}\0${region}\0${secretAccessKey}`;
  let key = signingKeys.get(id);
  if (!key) {
    if (signingKeys.size >= SIGNING_KEYS_KEPT) signingKeys.clear();
    key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), 's3'), 'aws4_request');
    signingKeys.set(id, key);
  }
  return key;
}

/** AWS Signature Version 4 headers for a GET with no body of `url`'s host and query at `path`: encoded, as sent, and S3's canonical URI as it is (S3 normalises no path). */
export function signV4(credentials: S3Credentials, url: URL, path: string, now = new Date()): Record<string, string> {
  const amzDate = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = {
    host: url.host,
    'x-amz-content-sha256': EMPTY_SHA256,
    'x-amz-date': amzDate,
  };
  if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const query = [...url.searchParams]
    .map(([name, value]) => [encode(name), encode(value)])
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : 1) : a < b ? -1 : 1))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalHeaders = names.map((name) => `${name}:${headers[name]}\n`).join('');
  const canonical = ['GET', path, query, canonicalHeaders, names.join(';'), EMPTY_SHA256].join('\n');
  const scope = `${day}/${credentials.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  const signature = createHmac('sha256', signingKey(credentials.secretAccessKey, day, credentials.region))
    .update(toSign)
    .digest('hex');
  const authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  return { ...headers, authorization };
}
