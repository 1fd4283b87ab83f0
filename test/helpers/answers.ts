// Two installs (a restore, a second host) answer alike when their bodies match once each signed URL is reduced to
// its path: addresses, signing secrets and expiries differ.
import { call } from './server.ts';

/**
 * The bodies of GETs ([key, path] each) by path, each URL under `server.url` reduced to its path; `urls` (path → URL)
 * collects the URLs found, so what they serve can be compared too.
 */
export async function answersByPath(
  server: { url: string },
  requests: Array<[string, string]>,
  urls: Map<string, string>,
): Promise<Record<string, unknown>> {
  const strip = (value: unknown): unknown => {
    if (typeof value === 'string' && value.startsWith(`${server.url}/`)) {
      const path = new URL(value).pathname;
      urls.set(path, value);
      return path;
    }
    if (Array.isArray(value)) return value.map(strip);
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([name, inner]) => [name, strip(inner)]));
    return value;
  };
  const bodies: Record<string, unknown> = {};
  for (const [key, path] of requests) {
    const response = await call(server, 'GET', path, { key });
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    bodies[path] = strip(response.body);
  }
  return bodies;
}
