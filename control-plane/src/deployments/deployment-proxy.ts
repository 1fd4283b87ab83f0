// HTTP to the deployments' inference servers: keep-alive connections per server (one undici Agent for them all), one
// deadline for the whole request (a server that sends a byte now and then does not hold it longer), a cap on the
// answer (held in memory only up to what the caller asks; a longer one streams through), and the server's failures
// as the platform answers them.
import { Readable } from 'node:stream';
import { Agent, errors, request } from 'undici';
import { BadGateway, GatewayTimeout, HttpError } from '../http/errors.ts';
import type { Upstream } from './deployment-router.ts';

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** The server's route (SERVICE_ROUTES). */
  route: string;
  /** Buffered (the platform's predict) or streamed through (the service URL). */
  body?: Uint8Array | Readable;
  contentType?: string;
  contentLength?: number;
  /** The most the answer's body may have: past it the request fails (502), streaming or not. */
  maxBytes: number;
  /**
   * Bytes of the answer held before it is given back (default maxBytes): a body that ends within them comes whole,
   * and every failure until then is still a status; a longer one streams.
   */
  holdBytes?: number;
}

/** What the server answered: its status and body. */
export interface UpstreamAnswer {
  status: number;
  /**
   * The whole body when it ended within `holdBytes`; else the body as it arrives (the bytes held first), which fails
   * with an HttpError past `maxBytes` or at the deadline.
   */
  body: Buffer | Readable;
  /** Settles once the body was read to its end, failed, or was dropped by its reader. */
  ended: Promise<AnswerEnd>;
}

export interface AnswerEnd {
  bytes: number;
  /** Why the body broke off: the deadline (504), the cap or the server (502). */
  failure?: HttpError;
}

/** The most any answer of a deployment's server may have (502 past it): predict's JSON is far smaller. */
export const ANSWER_MAX_BYTES = 32 * 2 ** 20;
/** What the service URL holds of an answer before it streams the rest (a predict's answer is held whole). */
export const SERVICE_HOLD_BYTES = 2 ** 20;
/** The platform's health check reads only `healthy`. */
export const HEALTH_MAX_BYTES = 64 * 2 ** 10;
/** Idle connections to a server are kept this long (its own keep-alive is longer, so it never closes one in use). */
const KEEP_ALIVE_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

export class DeploymentProxy {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(timeoutSeconds: number) {
    this.timeoutMs = timeoutSeconds * 1000;
    this.agent = new Agent({
      keepAliveTimeout: KEEP_ALIVE_MS,
      connect: { timeout: CONNECT_TIMEOUT_MS },
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
    });
  }

  /**
   * The server's answer whatever its status, within DEPLOYMENT_TIMEOUT_SECONDS from now to its last byte: 502 when it
   * cannot be reached or its body is over `maxBytes`, 504 past the deadline (for a streamed body, it breaks off).
   */
  async send(upstream: Upstream, call: UpstreamRequest): Promise<UpstreamAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${upstream.token}` };
    if (call.contentType) headers['content-type'] = call.contentType;
    if (call.contentLength !== undefined) headers['content-length'] = String(call.contentLength);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.timeoutMs);
    try {
      const answer = await request(new URL(call.route, upstream.url), {
        method: call.method,
        headers,
        body: call.body,
        dispatcher: this.agent,
        signal: deadline.signal,
      });
      // Its failures are read where it is read (held, streamed); one after that (dropped by its reader) is no news.
      answer.body.on('error', () => undefined).once('close', () => clearTimeout(timer));
      if (Number(answer.headers['content-length']) > call.maxBytes) {
        answer.body.destroy();
        throw tooLarge(call.maxBytes);
      }
      return await this.held(answer.statusCode, answer.body, call, deadline.signal);
    } catch (error) {
      clearTimeout(timer);
      throw this.failure(error, deadline.signal);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  /** Reads the body up to `holdBytes`: whole when it ended within them, else streamed on from there. */
  private held(status: number, body: Readable, call: UpstreamRequest, deadline: AbortSignal): Promise<UpstreamAnswer> {
    const { maxBytes, holdBytes = maxBytes } = call;
    const failure = (error: unknown) => this.failure(error, deadline);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let settle!: (end: AnswerEnd) => void;
    const ended = new Promise<AnswerEnd>((resolve) => (settle = resolve));
    return new Promise((resolve, reject) => {
      const hold = (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes) return void body.destroy(tooLarge(maxBytes));
        chunks.push(chunk);
        if (bytes <= holdBytes) return;
        body.pause().off('data', hold).off('end', whole).off('error', broke);
        let broken: HttpError | undefined;
        const stream = Readable.from(
          (async function* rest() {
            yield* chunks.splice(0);
            try {
              for await (const more of body as AsyncIterable<Buffer>) {
                bytes += more.length;
                if (bytes > maxBytes) throw tooLarge(maxBytes);
                yield more;
              }
            } catch (error) {
              throw (broken = failure(error));
            }
          })(),
          { objectMode: false },
        );
        // A reader that drops the stream before reading it never starts the generator: the body goes with it.
        stream.once('close', () => {
          body.destroy();
          settle({ bytes, ...(broken && { failure: broken }) });
        });
        resolve({ status, body: stream, ended });
      };
      const whole = () => {
        settle({ bytes });
        resolve({ status, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes), ended });
      };
      const broke = (error: unknown) => {
        const reason = failure(error);
        settle({ bytes, failure: reason });
        reject(reason);
      };
      body.on('data', hold).once('end', whole).once('error', broke);
    });
  }

  private failure(error: unknown, deadline: AbortSignal): HttpError {
    if (error instanceof HttpError) return error;
    if (deadline.aborted || error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) {
      return GatewayTimeout(
        `The deployment's server did not answer within ${this.timeoutMs / 1000} s (DEPLOYMENT_TIMEOUT_SECONDS)`,
      );
    }
    // Not how it failed: the caller learns nothing about the server's host (which ports answer) beyond that.
    return BadGateway("The deployment's server could not be reached; if it was just replaced or woken, try again");
  }
}

const tooLarge = (maxBytes: number) => BadGateway(`The deployment's server answered more than ${maxBytes} bytes`);

/**
 * A predict answer as the platform gives it: 2xx as received; what the caller got wrong (4xx) passed through as
 * `{ error }`; the server failing (5xx), or refusing the platform's own token, is 502. Only a whole body is quoted.
 */
export function predictAnswer(answer: UpstreamAnswer): Buffer | Readable {
  if (answer.status >= 200 && answer.status < 300) return answer.body;
  if (!Buffer.isBuffer(answer.body)) answer.body.destroy();
  const error = Buffer.isBuffer(answer.body) ? jsonField(answer.body, 'error') : undefined;
  const said = typeof error === 'string' ? error : undefined;
  if (answer.status === 401)
    throw BadGateway(
      "The deployment's server refused the platform's token (its revision may have just been replaced); try again",
    );
  if (answer.status < 500)
    throw new HttpError(answer.status, said ?? `The deployment's server answered ${answer.status}`);
  throw BadGateway(`The deployment's server failed (${answer.status})${said ? `: ${said}` : ''}`);
}

/** A field of a JSON object the server answered; undefined when the body is not one. */
export function jsonField(body: Buffer | Readable, name: string): unknown {
  if (!Buffer.isBuffer(body)) return undefined;
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[name] : undefined;
  } catch {
    return undefined;
  }
}
