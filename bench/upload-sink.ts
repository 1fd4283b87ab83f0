/**
 * The upload benchmark's ceiling: the simplest program that does what a PUT must, a bare node:http server that
 * streams each request's body from its socket into SINK_FILE (on the same disk as the store) and answers 200. The
 * benchmark times it like the PUT: from a synced disk, through the same client, until the bytes are on disk.
 * Prints `upload sink listening on <url>` once it accepts connections; SIGTERM closes it.
 */
import { createWriteStream } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';

const file = process.env.SINK_FILE;
if (!file) throw new Error('SINK_FILE is required');

const server = createServer((request, response) => {
  pipeline(request, createWriteStream(file)).then(
    () => response.writeHead(200).end(),
    (error: Error) => response.writeHead(500).end(error.message),
  );
});
server.listen(0, '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  console.log(`upload sink listening on http://${address}:${port}`);
});
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
