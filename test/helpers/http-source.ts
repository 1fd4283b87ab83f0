import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface HttpSource {
  /** `http://host:port` */
  origin: string;
  port: number;
  /** Paths requested so far, in order. */
  requests: string[];
}

/**
 * A plain HTTP server on a loopback address (127.0.0.1, or 127.0.0.2 to stand for an allowed host),
 * closed with the test: where ingest downloads come from in tests.
 */
export async function startHttpSource(
  t: Teardown,
  host: string,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<HttpSource> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { origin: `http://${host}:${port}`, port, requests };
}
