// HTTP to the deployments' inference servers: keep-alive connections per server (one undici Agent for them all), a
// bound on how long a server may take, and its failures as the platform answers them.
import type { Readable } from 'node:stream';
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
}

/** What the server answered: its status and body, as received. */
export interface UpstreamAnswer {
  status: number;
  body: Buffer;
}

/** Idle connections to a server are kept this long (its own keep-alive is longer, so it never closes one in use). */
const KEEP_ALIVE_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;

export class DeploymentProxy {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(timeoutSeconds: number) {
    this.timeoutMs = timeoutSeconds * 1000;
    this.agent = new Agent({ keepAliveTimeout: KEEP_ALIVE_MS, connect: { timeout: CONNECT_TIMEOUT_MS }, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs });
  }

  /** The server's answer whatever its status; 502 when it cannot be reached, 504 when it takes too long. */
  async send(upstream: Upstream, call: UpstreamRequest): Promise<UpstreamAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${upstream.token}` };
    if (call.contentType) headers['content-type'] = call.contentType;
    if (call.contentLength !== undefined) headers['content-length'] = String(call.contentLength);
    try {
      const answer = await request(new URL(call.route, upstream.url), { method: call.method, headers, body: call.body, dispatcher: this.agent });
      return { status: answer.statusCode, body: Buffer.from(await answer.body.arrayBuffer()) };
    } catch (error) {
      throw this.failure(error);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }

  private failure(error: unknown): HttpError {
    if (error instanceof HttpError) return error;
    if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) {
      return GatewayTimeout(`The deployment's server did not answer within ${this.timeoutMs / 1000} s (DEPLOYMENT_TIMEOUT_SECONDS)`);
    }
    const cause = error instanceof Error ? ((error as Error & { code?: string }).code ?? error.message) : String(error);
    return BadGateway(`The deployment's server could not be reached (${cause}); if it was just replaced or woken, try again`);
  }
}

/**
 * A predict answer as the platform gives it: 2xx as received; what the caller got wrong (4xx) passed through as
 * `{ error }`; the server failing (5xx), or refusing the platform's own token, is 502.
 */
export function predictAnswer(answer: UpstreamAnswer): Buffer {
  if (answer.status >= 200 && answer.status < 300) return answer.body;
  const error = jsonField(answer.body, 'error');
  const said = typeof error === 'string' ? error : undefined;
  if (answer.status === 401) throw BadGateway("The deployment's server refused the platform's token (its revision may have just been replaced); try again");
  if (answer.status < 500) throw new HttpError(answer.status, said ?? `The deployment's server answered ${answer.status}`);
  throw BadGateway(`The deployment's server failed (${answer.status})${said ? `: ${said}` : ''}`);
}

/** A field of a JSON object the server answered; undefined when the body is not one. */
export function jsonField(body: Buffer, name: string): unknown {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[name] : undefined;
  } catch {
    return undefined;
  }
}
