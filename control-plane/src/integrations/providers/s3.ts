import { createHash, createHmac } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { guardedFetch, OutboundError, type OutboundPolicy } from '../../net/guarded-fetch.ts';
import type { S3Credentials } from '../integration.schemas.ts';
import { ProviderError, type BrowseRequest, type ListRequest, type ObjectPage, type ReadRequest, type StorageProvider, type StoredObjectPage } from './provider.ts';

/** S3 listings are small XML documents (1,000 keys at most); anything past this is not a listing. */
const MAX_LISTING_BYTES = 8 * 1024 * 1024;
const TIMEOUT_MS = 15_000;
const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');
/** Buckets checked at once while discovering. */
const DISCOVER_CONCURRENCY = 4;

/**
 * S3 and S3-compatible services (MinIO, Ceph RGW, SeaweedFS). Requests are signed here (SigV4) and sent through
 * the guarded fetcher, so an endpoint on a loopback or private address is refused unless the operator allowed
 * its network (OUTBOUND_ALLOWED_NETWORKS), like every other request the appliance makes for a user.
 */
export class S3Provider implements StorageProvider<S3Credentials> {
  private readonly policy: OutboundPolicy;

  constructor(policy: OutboundPolicy) {
    this.policy = policy;
  }

  identity(credentials: S3Credentials): string {
    return credentials.accessKeyId;
  }

  async discover(credentials: S3Credentials): Promise<string[]> {
    const listing = await this.get(credentials, undefined, {}, 'list the buckets');
    const names = elements(listing, 'Bucket').map((bucket) => text(bucket, 'Name') ?? '').filter(Boolean);
    // ListBuckets names what the account owns; only those whose objects these credentials can list are offered.
    const readable: string[] = [];
    for (let i = 0; i < names.length; i += DISCOVER_CONCURRENCY) {
      const batch = names.slice(i, i + DISCOVER_CONCURRENCY);
      const checks = await Promise.allSettled(batch.map((name) => this.checkTarget(credentials, name)));
      checks.forEach((check, j) => {
        if (check.status === 'fulfilled') readable.push(batch[j]);
        else if (!(check.reason instanceof ProviderError && check.reason.kind === 'rejected')) throw check.reason;
      });
    }
    return readable.sort();
  }

  async checkTarget(credentials: S3Credentials, target: string): Promise<void> {
    await this.get(credentials, target, { 'list-type': '2', 'max-keys': '1' }, `list bucket ${target}`);
  }

  async browse(credentials: S3Credentials, request: BrowseRequest): Promise<ObjectPage> {
    const query: Record<string, string> = { 'list-type': '2', delimiter: '/', prefix: request.prefix, 'max-keys': String(request.limit) };
    if (request.cursor) query['continuation-token'] = request.cursor;
    const listing = await this.get(credentials, request.target, query, `list bucket ${request.target}`);
    const folders = elements(listing, 'CommonPrefixes').map((entry) => text(entry, 'Prefix') ?? '').filter(Boolean);
    const files = elements(listing, 'Contents')
      .map((entry) => ({ key: text(entry, 'Key') ?? '', size: Number(text(entry, 'Size') ?? 0), updatedAt: text(entry, 'LastModified') }))
      // The prefix itself (a "folder" object some tools create) is not an entry beneath it.
      .filter((file) => file.key && file.key !== request.prefix);
    const cursor = text(listing, 'IsTruncated') === 'true' ? text(listing, 'NextContinuationToken') : undefined;
    return {
      entries: [
        ...folders.map((key) => ({ kind: 'folder' as const, name: key.slice(request.prefix.length).replace(/\/$/, ''), key })),
        ...files.map((file) => ({
          kind: 'file' as const,
          name: file.key.slice(file.key.lastIndexOf('/') + 1),
          key: file.key,
          size: file.size,
          updatedAt: file.updatedAt ? new Date(file.updatedAt).toISOString() : undefined,
        })),
      ],
      cursor: cursor || undefined,
    };
  }

  async list(credentials: S3Credentials, request: ListRequest): Promise<StoredObjectPage> {
    const query: Record<string, string> = { 'list-type': '2', prefix: request.prefix, 'max-keys': '1000' };
    if (request.cursor) query['continuation-token'] = request.cursor;
    const listing = await this.get(credentials, request.target, query, `list bucket ${request.target}`);
    const objects = elements(listing, 'Contents')
      .map((entry) => ({ key: text(entry, 'Key') ?? '', size: Number(text(entry, 'Size') ?? 0), version: text(entry, 'ETag') ?? '', updatedAt: text(entry, 'LastModified') }))
      .filter((object) => object.key && !object.key.endsWith('/'))
      .map((object) => ({ ...object, updatedAt: object.updatedAt ? new Date(object.updatedAt).toISOString() : undefined }));
    const cursor = text(listing, 'IsTruncated') === 'true' ? text(listing, 'NextContinuationToken') : undefined;
    return { objects, cursor: cursor || undefined };
  }

  async read(credentials: S3Credentials, request: ReadRequest): Promise<Readable> {
    const url = bucketUrl(credentials, request.target);
    url.pathname = `${url.pathname.replace(/\/$/, '')}/${request.key.split('/').map(encode).join('/')}`;
    const what = `read ${request.key} of bucket ${request.target}`;
    const { body } = await this.send(credentials, url, request.maxBytes, what, request.signal);
    // A body cut off past maxBytes (or stalled) fails the stream with a ProviderError, like a refused request.
    const out = new PassThrough();
    body.on('error', (error) => out.destroy(asProviderError(error, what, url) as Error));
    return body.pipe(out);
  }

  /** A signed GET of the service (no bucket) or of a bucket, answered with its XML text. */
  private async get(credentials: S3Credentials, bucket: string | undefined, query: Record<string, string>, what: string): Promise<string> {
    const url = bucketUrl(credentials, bucket);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    const response = await this.send(credentials, url, MAX_LISTING_BYTES, what);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of response.body) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    } catch (error) {
      throw asProviderError(error, what, url);
    }
  }

  private async send(credentials: S3Credentials, url: URL, maxBytes: number, what: string, signal?: AbortSignal) {
    try {
      return await guardedFetch(url.href, { policy: this.policy, maxBytes, timeoutMs: TIMEOUT_MS, idleTimeoutMs: TIMEOUT_MS, headers: signV4(credentials, url), signal });
    } catch (error) {
      throw asProviderError(error, what, url);
    }
  }
}

function asProviderError(error: unknown, what: string, url: URL): unknown {
  if (!(error instanceof OutboundError)) return error;
  if (error.kind === 'refused') {
    return new ProviderError(`credentials.endpoint: ${error.message}; an operator allows on-premise storage with OUTBOUND_ALLOWED_NETWORKS`, 'refused');
  }
  const status = error.status;
  if (status === 401 || status === 403) return new ProviderError(`S3 at ${url.host} refused these credentials to ${what} (HTTP ${status})`, 'rejected');
  if (status === 404) return new ProviderError(`S3 at ${url.host} could not ${what}: no such bucket (HTTP 404)`, 'rejected');
  if (status === 301 || status === 400) return new ProviderError(`S3 at ${url.host} could not ${what} (HTTP ${status}): check credentials.region and credentials.endpoint`, 'rejected');
  return new ProviderError(`S3 at ${url.host} could not ${what}: ${error.message}`, status === undefined && error.kind === 'failed' ? 'unreachable' : 'failing');
}

function bucketUrl(credentials: S3Credentials, bucket: string | undefined): URL {
  const endpoint = new URL(credentials.endpoint ?? `https://s3.${credentials.region}.amazonaws.com`);
  if (!bucket) return new URL('/', endpoint);
  const pathStyle = credentials.forcePathStyle ?? credentials.endpoint !== undefined;
  if (pathStyle) return new URL(`/${bucket}`, endpoint);
  endpoint.hostname = `${bucket}.${endpoint.hostname}`;
  return new URL('/', endpoint);
}

/** RFC 3986 encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
function encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/** AWS Signature Version 4 headers for a GET with no body. */
export function signV4(credentials: S3Credentials, url: URL, now = new Date()): Record<string, string> {
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = { host: url.host, 'x-amz-content-sha256': EMPTY_SHA256, 'x-amz-date': amzDate };
  if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const query = [...url.searchParams]
    .map(([name, value]) => [encode(name), encode(value)])
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : 1) : a < b ? -1 : 1))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const path = url.pathname.split('/').map((segment) => encode(decodeURIComponent(segment))).join('/');
  const canonicalHeaders = names.map((name) => `${name}:${headers[name]}\n`).join('');
  const canonical = ['GET', path, query, canonicalHeaders, names.join(';'), EMPTY_SHA256].join('\n');
  const scope = `${day}/${credentials.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), credentials.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  const authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}`;
  return { ...headers, authorization };
}

/** The inner XML of each `<name>` element (S3 listings nest no element within one of the same name). */
function elements(xml: string, name: string): string[] {
  return [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((match) => match[1]);
}

function text(xml: string, name: string): string | undefined {
  const inner = elements(xml, name)[0];
  return inner === undefined ? undefined : unescapeXml(inner);
}

function unescapeXml(value: string): string {
  return value.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, entity: string) => {
    if (entity[0] === '#') return String.fromCodePoint(entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : Number(entity.slice(1)));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[entity.toLowerCase()]!;
  });
}
