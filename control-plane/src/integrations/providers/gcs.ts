import { createHash, createSign } from 'node:crypto';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import type { OutboundPolicy } from '../../net/guarded-fetch.ts';
import type { GcsCredentials, S3Credentials } from '../integration.schemas.ts';
import { MAX_DISCOVER_PAGES, ProviderHttp, readableTargets, type Request } from './http.ts';
import { isoTime, objectPage } from './page.ts';
import {
  ProviderError,
  type BrowseRequest,
  type ListRequest,
  type ObjectPage,
  type ReadRequest,
  type StorageProvider,
  type StoredObjectPage,
} from './provider.ts';
import { setQuery } from './query.ts';
import { S3Provider } from './s3.ts';

type ServiceAccount = Extract<GcsCredentials, { serviceAccountKey: unknown }>;
type Hmac = Extract<GcsCredentials, { hmacAccessId: string }>;

const GOOGLE_STORAGE = 'https://storage.googleapis.com';
const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const READ_ONLY_SCOPE = 'https://www.googleapis.com/auth/devstorage.read_only';
const LIST_PAGE = 1000;
/** Access tokens kept for reuse (one per service account key); past this the oldest goes. */
const MAX_TOKENS = 100;
/**
 * Access tokens by a hash of the key they were issued for, shared by every provider instance in the process (a
 * service is made per request, and an ingest reads thousands of objects with one integration's credentials).
 */
const tokens = new Map<string, { token: string; expiresAt: number }>();
const SERVICE = {
  name: 'GCS',
  missing: 'no such bucket',
  check: 'credentials.serviceAccountKey and credentials.endpoint',
};

const TokenAnswer = z.object({ access_token: z.string().min(1), expires_in: z.number().positive().optional() });
const Listing = z.object({
  items: z
    .array(
      z.object({
        name: z.string(),
        size: z.string().optional(),
        updated: z.string().optional(),
        generation: z.string().optional(),
      }),
    )
    .optional(),
  prefixes: z.array(z.string()).optional(),
  nextPageToken: z.string().optional(),
});
const BucketListing = z.object({
  items: z.array(z.object({ name: z.string() })).optional(),
  nextPageToken: z.string().optional(),
});

/**
 * Google Cloud Storage. With a service account key: a JWT signed with its private key (RS256) is exchanged at the
 * key's token_uri for a read-only access token, and the JSON API is used. With an HMAC key: the XML API, which
 * speaks S3 (SigV4, region "auto"). Every request goes through the guarded fetcher.
 */
export class GcsProvider implements StorageProvider<GcsCredentials> {
  private readonly http: ProviderHttp;
  private readonly xml: S3Provider;

  constructor(policy: OutboundPolicy) {
    this.http = new ProviderHttp(policy, SERVICE);
    this.xml = new S3Provider(policy, { ...SERVICE, check: 'credentials.hmacAccessId and credentials.endpoint' });
  }

  identity(credentials: GcsCredentials): string {
    return 'hmacAccessId' in credentials ? credentials.hmacAccessId : credentials.serviceAccountKey.client_email;
  }

  async discover(credentials: GcsCredentials): Promise<string[]> {
    if ('hmacAccessId' in credentials) return this.xml.discover(asS3(credentials));
    const names: string[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page === 0 || (pageToken && page < MAX_DISCOVER_PAGES); page += 1) {
      const query = {
        project: credentials.serviceAccountKey.project_id,
        maxResults: String(LIST_PAGE),
        ...(pageToken ? { pageToken } : {}),
      };
      const listing = await this.json(credentials, 'b', query, 'list the buckets', BucketListing);
      names.push(...(listing.items ?? []).map((bucket) => bucket.name));
      pageToken = listing.nextPageToken || undefined;
    }
    return readableTargets(names, (name) => this.checkTarget(credentials, name));
  }

  async checkTarget(credentials: GcsCredentials, target: string): Promise<void> {
    if ('hmacAccessId' in credentials) return this.xml.checkTarget(asS3(credentials), target);
    await this.objects(credentials, target, { maxResults: '1' });
  }

  async browse(credentials: GcsCredentials, request: BrowseRequest): Promise<ObjectPage> {
    if ('hmacAccessId' in credentials) return this.xml.browse(asS3(credentials), request);
    const page = await this.objects(
      credentials,
      request.target,
      { prefix: request.prefix, delimiter: '/', maxResults: String(request.limit) },
      request.cursor,
    );
    const files = (page.items ?? []).map((item) => ({
      key: item.name,
      size: Number(item.size ?? 0),
      updatedAt: item.updated,
    }));
    return objectPage(request.prefix, page.prefixes ?? [], files, page.nextPageToken);
  }

  async list(credentials: GcsCredentials, request: ListRequest): Promise<StoredObjectPage> {
    if ('hmacAccessId' in credentials) return this.xml.list(asS3(credentials), request);
    const page = await this.objects(
      credentials,
      request.target,
      { prefix: request.prefix, maxResults: String(request.limit ?? LIST_PAGE) },
      request.cursor,
    );
    const objects = (page.items ?? [])
      .filter((item) => item.name && !item.name.endsWith('/'))
      // A generation is new whenever the object is written.
      .map((item) => ({
        key: item.name,
        size: Number(item.size ?? 0),
        version: item.generation ?? '',
        updatedAt: isoTime(item.updated),
      }));
    return { objects, cursor: page.nextPageToken || undefined };
  }

  async read(credentials: GcsCredentials, request: ReadRequest): Promise<Readable> {
    if ('hmacAccessId' in credentials) return this.xml.read(asS3(credentials), request);
    const address = apiAddress(
      credentials,
      `b/${encodeURIComponent(request.target)}/o/${encodeURIComponent(request.key)}`,
      { alt: 'media', ...(request.ifVersion ? { ifGenerationMatch: request.ifVersion } : {}) },
    );
    const what = `read ${request.key} of bucket ${request.target}`;
    return this.withToken(credentials, (headers) =>
      this.http.stream({ ...address, headers, what, missing: 'no such object' }, request.maxBytes, request.signal),
    );
  }

  private objects(credentials: ServiceAccount, bucket: string, query: Record<string, string>, pageToken?: string) {
    return this.json(
      credentials,
      `b/${encodeURIComponent(bucket)}/o`,
      { ...query, ...(pageToken ? { pageToken } : {}) },
      `list bucket ${bucket}`,
      Listing,
    );
  }

  private async json<T>(
    credentials: ServiceAccount,
    path: string,
    query: Record<string, string>,
    what: string,
    schema: z.ZodType<T>,
  ): Promise<T> {
    const address = apiAddress(credentials, path, query);
    return this.withToken(credentials, (headers) => this.answer({ ...address, headers, what }, schema));
  }

  /**
   * A request with the key's access token. A 401 says the token is no longer good though it has not expired (revoked,
   * or the key disabled and enabled again): it is dropped and the request sent once more with a new one.
   */
  private async withToken<T>(
    credentials: ServiceAccount,
    send: (headers: Record<string, string>) => Promise<T>,
  ): Promise<T> {
    const key = credentials.serviceAccountKey;
    const token = await this.token(key);
    try {
      return await send({ authorization: `Bearer ${token}` });
    } catch (error) {
      if (!(error instanceof ProviderError && error.status === 401)) throw error;
      if (tokens.get(tokenId(key))?.token === token) tokens.delete(tokenId(key));
      return send({ authorization: `Bearer ${await this.token(key)}` });
    }
  }

  private async answer<T>(request: Request, schema: z.ZodType<T>): Promise<T> {
    const text = await this.http.text(request);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: falls to the schema's failure below.
    }
    const result = schema.safeParse(parsed);
    if (!result.success)
      throw new ProviderError(
        `GCS at ${request.url.host} could not ${request.what}: its answer was not understood`,
        'failing',
      );
    return result.data;
  }

  /** A read-only access token for the key, reused until a minute before it expires. */
  private async token(key: ServiceAccount['serviceAccountKey']): Promise<string> {
    const tokenUri = key.token_uri ?? GOOGLE_TOKEN_URI;
    const id = tokenId(key);
    const cached = tokens.get(id);
    if (cached && cached.expiresAt > Date.now()) return cached.token;
    const now = Math.floor(Date.now() / 1000);
    const assertion = signJwt(
      { iss: key.client_email, scope: READ_ONLY_SCOPE, aud: tokenUri, iat: now, exp: now + 3600 },
      key.private_key,
    );
    const answer = await this.answer(
      {
        url: new URL(tokenUri),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
        what: `get an access token for ${key.client_email}`,
        field: 'credentials.serviceAccountKey.token_uri',
      },
      TokenAnswer,
    );
    if (tokens.size >= MAX_TOKENS) tokens.delete(tokens.keys().next().value!);
    tokens.set(id, { token: answer.access_token, expiresAt: Date.now() + ((answer.expires_in ?? 3600) - 60) * 1000 });
    return answer.access_token;
  }
}

/** The cache's name for a key's tokens: a hash, so the cache holds no key. */
const tokenId = (key: ServiceAccount['serviceAccountKey']): string =>
  createHash('sha256')
    .update(`${key.token_uri ?? GOOGLE_TOKEN_URI}\n${key.client_email}\n${key.private_key}`)
    .digest('hex');

/**
 * A JSON API request's URL (host, query) and path, sent as is: a key is one segment (its slashes encoded), so only a
 * key that is `.` or `..` is a dot segment, a name GCS allows no object: its request is refused (Service.keepsDotSegments).
 */
function apiAddress(
  credentials: ServiceAccount,
  path: string,
  query: Record<string, string>,
): { url: URL; path: string } {
  const url = new URL('/', credentials.endpoint ?? GOOGLE_STORAGE);
  setQuery(url, Object.entries(query));
  return { url, path: `/storage/v1/${path}` };
}

function asS3(credentials: Hmac): S3Credentials {
  return {
    accessKeyId: credentials.hmacAccessId,
    secretAccessKey: credentials.hmacSecret,
    region: 'auto',
    endpoint: credentials.endpoint ?? GOOGLE_STORAGE,
    forcePathStyle: true,
  };
}

const base64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A JWT signed with RS256: what Google's token endpoint takes for a service account (RFC 7523). */
function signJwt(claims: Record<string, unknown>, privateKey: string): string {
  const unsigned = `${base64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }))}.${base64url(JSON.stringify(claims))}`;
  try {
    return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(privateKey, 'base64url')}`;
  } catch {
    throw new ProviderError('credentials.serviceAccountKey.private_key: not a usable RSA private key', 'rejected');
  }
}
