/**
 * The benchmark's ceiling: a bare Koa app answering a constant JSON body over the same node:http
 * server settings as the control plane. Listens on HOST:PORT (PORT=0 picks a free one) and prints
 * `bare koa listening on <url>` once it accepts connections; SIGTERM/SIGINT close it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const body = { ok: true, service: 'bare-koa', plan: 'enterprise', region: 'us' };

const app = new Koa();
app.use((ctx) => {
  ctx.body = body;
});

const handle = app.callback();
// Koa answers its own errors (ctx.onerror), so the promise of each request is left to it.
const server = createServer((request, response) => void handle(request, response));
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo;
  console.log(`bare koa listening on http://${address}:${port}`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
