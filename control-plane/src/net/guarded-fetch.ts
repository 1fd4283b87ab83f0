import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { Transform, type Readable } from 'node:stream';
import { OutboundError, type OutboundPolicy } from './outbound-policy.ts';

export { OutboundError, OutboundPolicy } from './outbound-policy.ts';

export interface GuardedFetchOptions {
  policy: OutboundPolicy;
  /** The body stops with an OutboundError ('too-large') once more bytes than this have come, announced or not. */
  maxBytes: number;
  signal?: AbortSignal;
  /** For the response headers of each hop. */
  timeoutMs?: number;
  /** For each wait on the body: a server that stops sending fails the download. */
  idleTimeoutMs?: number;
  /**
   * Extra request headers (a signed request's authorization). They may carry credentials, so a request with
   * them follows no redirect: a redirect answer is then a failure with its status, like any other non-2xx.
   */
  headers?: Record<string, string>;
  /** A small form or JSON body, sent as a POST (a token exchange) that follows no redirect; without it, a GET. */
  body?: string;
  /**
   * The path and query sent, percent-encoded, in place of the URL's: URL parsing resolves `.` and `..` segments (even
   * as %2E%2E), which a storage key holds as part of its name. Only the first request's: a redirect names its own.
   */
  path?: string;
}

export interface GuardedResponse {
  /** The URL that answered, after redirects. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The body, counted against `maxBytes` while it streams. */
  body: Readable;
}

const MAX_REDIRECTS = 5;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * GET (or, with a body, POST) of a user-given URL, for every download the appliance makes on a user's behalf: http(s) only,
 * every address checked by the policy before connecting (redirect hops too, followed here, at most 5),
 * timeouts on the headers and on a stalled body, and the body capped at `maxBytes`. A response other
 * than 2xx is an OutboundError naming the status only. Errors other than OutboundError are the signal's.
 */
export async function guardedFetch(url: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
  let current = url;
  for (let hop = 0; ; hop += 1) {
    const response = await requestOnce(current, hop === 0 ? options : { ...options, path: undefined }).catch(
      (error: unknown) => {
        if (hop > 0 && error instanceof OutboundError && error.kind === 'refused')
          throw new OutboundError(`redirected to ${current}, which is refused: ${error.message}`, 'refused');
        throw error;
      },
    );
    const status = response.statusCode ?? 0;
    if (REDIRECTS.has(status) && response.headers.location && !options.headers && options.body === undefined) {
      response.destroy();
      if (hop === MAX_REDIRECTS) throw new OutboundError(`more than ${MAX_REDIRECTS} redirects`, 'failed');
      const next = URL.parse(response.headers.location, current);
      if (!next) throw new OutboundError('redirected to an invalid URL', 'failed');
      current = next.href;
      continue;
    }
    if (status < 200 || status > 299) {
      response.destroy();
      throw new OutboundError(`HTTP ${status}`, 'failed', status);
    }
    const announced = Number(response.headers['content-length'] ?? 0);
    if (announced > options.maxBytes) {
      response.destroy();
      throw new OutboundError(`larger than ${options.maxBytes} bytes`, 'too-large');
    }
    return { url: current, headers: response.headers, body: limitedBody(response, options) };
  }
}

/** The whole body of a user-given URL in memory, for small things (images): at most `maxBytes` are ever held. */
export async function fetchBytes(url: string, options: GuardedFetchOptions): Promise<Buffer> {
  const { body } = await guardedFetch(url, options);
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** One request, resolved at its response headers; the URL's scheme and address are checked first. */
function requestOnce(
  url: string,
  { policy, signal, headers, body, path, timeoutMs = DEFAULT_TIMEOUT_MS }: GuardedFetchOptions,
): Promise<IncomingMessage> {
  const target = URL.parse(url);
  if (!target) return Promise.reject(new OutboundError('not a valid URL', 'refused'));
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    return Promise.reject(
      new OutboundError(`${target.protocol} URLs are not downloaded (only http and https)`, 'refused'),
    );
  }
  // The agents' lookup checks names; an address literal is never looked up, so it is checked here.
  const literal = target.hostname.replace(/^\[|\]$/g, '');
  const refused = isIP(literal) ? policy.refusal(target.hostname, literal) : null;
  if (refused) return Promise.reject(new OutboundError(refused, 'refused'));
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const secure = target.protocol === 'https:';
    const request = (secure ? httpsRequest : httpRequest)(target, {
      ...(path === undefined ? {} : { path }),
      method: body === undefined ? 'GET' : 'POST',
      agent: secure ? policy.agents.https : policy.agents.http,
      signal,
      headers: {
        accept: '*/*',
        ...headers,
        ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
      },
    });
    const timer = setTimeout(
      () => request.destroy(new OutboundError(`no response within ${timeoutMs / 1000} s`, 'failed')),
      timeoutMs,
    );
    request.once('response', (response) => {
      clearTimeout(timer);
      resolve(response);
    });
    request.once('error', (error) => {
      clearTimeout(timer);
      reject(signal?.aborted ? signal.reason : userSafe(error, target));
    });
    request.end(body);
  });
}

/** The response body, failing with an OutboundError past `maxBytes` or after `idleTimeoutMs` without data. */
function limitedBody(
  response: IncomingMessage,
  { maxBytes, idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS }: GuardedFetchOptions,
): Readable {
  let seen = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      idle.refresh();
      seen += chunk.length;
      if (seen > maxBytes) callback(new OutboundError(`larger than ${maxBytes} bytes`, 'too-large'));
      else callback(null, chunk);
    },
  });
  const idle = setTimeout(
    () => limited.destroy(new OutboundError(`no data for ${idleTimeoutMs / 1000} s`, 'failed')),
    idleTimeoutMs,
  );
  response.once('error', (error) =>
    limited.destroy(
      error instanceof OutboundError
        ? error
        : new OutboundError('the connection broke off during the download', 'failed'),
    ),
  );
  // Ended, failed or dropped by its reader: an unfinished response gives up its connection.
  limited.once('close', () => {
    clearTimeout(idle);
    if (!response.complete) response.destroy();
  });
  response.pipe(limited);
  return limited;
}

/** What a failed connection may tell the user: that it failed, not how (no port scanning through messages). */
function userSafe(error: Error, target: URL): OutboundError {
  if (error instanceof OutboundError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return new OutboundError(`could not resolve ${target.hostname}`, 'failed');
  return new OutboundError(`could not connect to ${target.host}`, 'failed');
}
