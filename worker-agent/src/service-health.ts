// A service job's start: its health path polled on this host until it answers 200, and the URL the control plane
// reaches it at (JobSpec.service, job.service).
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 250;
/** One health request's bound: a server that accepts but never answers is not healthy. */
const REQUEST_TIMEOUT_MS = 2000;

/** Resolves once `url` answers 200; rejects after `timeoutMs` (saying what it last got), or when `signal` aborts. */
export async function waitHealthy(url: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (!signal.aborted) {
    try {
      const response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]) });
      await response.body?.cancel();
      if (response.status === 200) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() >= deadline)
      throw new Error(
        `it did not answer ${new URL(url).pathname} with 200 within ${Math.round(timeoutMs / 1000)} s (last: ${last})`,
      );
    await sleep(POLL_MS, undefined, { signal }).catch(() => {});
  }
  throw new Error('the job ended');
}

/** The service's origin at `host` (a name or an IP address; IPv6 in brackets, an IPv4-mapped one as IPv4). */
export function serviceUrl(host: string, port: number): string {
  const address = host.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}
