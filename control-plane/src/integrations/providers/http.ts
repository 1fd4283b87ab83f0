import { PassThrough, type Readable } from 'node:stream';
import { guardedFetch, OutboundError, type OutboundPolicy } from '../../net/guarded-fetch.ts';
import { AnswerError, ProviderError } from './provider.ts';
import { XmlReader, type XmlElement } from './xml.ts';

/** Listings and token answers are small documents (a thousand or so entries); anything past this is not one. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;
const TIMEOUT_MS = 15_000;

/** How a storage service is named in errors, and what its answers mean. */
export interface Service {
  /** "S3", "GCS", "Azure Blob". */
  name: string;
  /** What a 404 means, e.g. "no such bucket". */
  missing: string;
  /** The credentials' fields to check after a 400 (the request did not fit the service). */
  check: string;
  /**
   * The service reads `.` and `..` path segments as part of a name, and the request's signature covers its exact path
   * (S3's SigV4): anything on the way that resolved one would fail the signature, not name another object. Elsewhere
   * (Azure, GCS's JSON API) they are resolved (`c/a/../b` names c/b): a request whose path holds one is refused.
   */
  keepsDotSegments?: boolean;
}

export interface Request {
  /** The service's origin and the query; its path when `path` is not given. */
  url: URL;
  /**
   * The path sent (and signed), percent-encoded: a key's, which must reach the service exactly as it names the object,
   * for URL parsing resolves `.` and `..` segments (even as %2E%2E): `bucket/../other/key` would read another bucket.
   */
  path?: string;
  headers: Record<string, string>;
  /** "list bucket photos": errors say the service could not do this. */
  what: string;
  /** A POST body (a token exchange). */
  body?: string;
  /** The credentials' field the URL came from, named when the outbound rules refuse it. */
  field?: string;
  /** What a 404 means here, when not the service's: set for an object read, whose 404 is a `missing` object. */
  missing?: string;
}

/**
 * A provider's requests: each through the guarded fetcher (user-given endpoints are checked against the outbound
 * rules), with its failures turned into ProviderErrors whose words are safe to show (nothing the service sent).
 */
export class ProviderHttp {
  private readonly policy: OutboundPolicy;
  private readonly service: Service;

  constructor(policy: OutboundPolicy, service: Service) {
    this.policy = policy;
    this.service = service;
  }

  /** A small answer (a listing, a token), whole, as text. */
  async text(request: Request): Promise<string> {
    const { body } = await this.send(request, MAX_ANSWER_BYTES);
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of body) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    } catch (error) {
      throw this.error(error, request);
    }
  }

  /** An XML answer (a listing), read as it arrives: one that is not a listing is refused at its first wrong chunk. */
  async xml(request: Request): Promise<XmlElement> {
    const { body } = await this.send(request, MAX_ANSWER_BYTES);
    const reader = new XmlReader();
    try {
      for await (const chunk of body) reader.write(chunk as Buffer);
      return reader.end();
    } catch (error) {
      throw this.error(error, request);
    }
  }

  /** An object's bytes: a body cut off past maxBytes (or stalled) fails the stream with a ProviderError. */
  async stream(request: Request, maxBytes: number, signal?: AbortSignal): Promise<Readable> {
    const { body } = await this.send(request, maxBytes, signal);
    const out = new PassThrough();
    body.on('error', (error) => out.destroy(this.error(error, request) as Error));
    return body.pipe(out);
  }

  private async send(request: Request, maxBytes: number, signal?: AbortSignal) {
    const { url, path } = request;
    if (
      path !== undefined &&
      !this.service.keepsDotSegments &&
      path.split('/').some((segment) => segment === '.' || segment === '..')
    ) {
      const { name } = this.service;
      throw new ProviderError(
        `${name} at ${url.host} could not ${request.what}: ${name} resolves . and .. path segments, so a name holding one would name another object`,
        'rejected',
      );
    }
    try {
      return await guardedFetch(url.href, {
        policy: this.policy,
        maxBytes,
        timeoutMs: TIMEOUT_MS,
        idleTimeoutMs: TIMEOUT_MS,
        headers: request.headers,
        body: request.body,
        path: path === undefined ? undefined : `${path}${url.search}`,
        signal,
      });
    } catch (error) {
      throw this.error(error, request);
    }
  }

  private error(error: unknown, request: Request): unknown {
    const { url, what, field = 'credentials.endpoint', missing = this.service.missing } = request;
    if (error instanceof AnswerError)
      return new ProviderError(
        `${this.service.name} at ${url.host} could not ${what}: its answer was not understood (${error.message})`,
        'failing',
      );
    if (!(error instanceof OutboundError)) return error;
    if (error.kind === 'refused')
      return new ProviderError(
        `${field}: ${error.message}; an operator allows on-premise storage with OUTBOUND_ALLOWED_NETWORKS`,
        'refused',
      );
    const { name, check } = this.service;
    const status = error.status;
    if (status === 401 || status === 403)
      return new ProviderError(
        `${name} at ${url.host} refused these credentials to ${what} (HTTP ${status})`,
        'rejected',
        status,
      );
    if (status === 404)
      return new ProviderError(
        `${name} at ${url.host} could not ${what}: ${missing} (HTTP 404)`,
        request.missing ? 'missing' : 'rejected',
      );
    if (status === 412)
      return new ProviderError(
        `${name} at ${url.host} could not ${what}: it changed since it was listed (HTTP 412)`,
        'changed',
      );
    if (status === 301 || status === 400)
      return new ProviderError(`${name} at ${url.host} could not ${what} (HTTP ${status}): check ${check}`, 'rejected');
    return new ProviderError(
      `${name} at ${url.host} could not ${what}: ${error.message}`,
      status === undefined && error.kind === 'failed' ? 'unreachable' : 'failing',
    );
  }
}

/** Pages of buckets discover reads at most (tens of thousands of buckets): a service that pages on forever is cut off. */
export const MAX_DISCOVER_PAGES = 20;

/** Buckets checked at once while discovering. */
const DISCOVER_CONCURRENCY = 4;

/**
 * The buckets among `names` that `check` passes: a listing of buckets names what an account owns, and only those
 * whose objects the credentials can list are offered. A refusal drops a bucket; any other failure is the answer.
 */
export async function readableTargets(names: string[], check: (name: string) => Promise<void>): Promise<string[]> {
  const readable: string[] = [];
  for (let i = 0; i < names.length; i += DISCOVER_CONCURRENCY) {
    const batch = names.slice(i, i + DISCOVER_CONCURRENCY);
    const checks = await Promise.allSettled(batch.map(check));
    checks.forEach((result, j) => {
      if (result.status === 'fulfilled') readable.push(batch[j]);
      else if (!(result.reason instanceof ProviderError && result.reason.kind === 'rejected')) throw result.reason;
    });
  }
  return readable.sort();
}
