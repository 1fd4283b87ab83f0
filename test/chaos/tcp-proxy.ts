// A TCP proxy between two parts of the appliance under test, so the chaos suite can cut their connections (every open
// one reset, new ones refused) and slow them (each chunk held back), then restore them. Given several targets it is the
// replicas' load balancer: each connection goes to the next target that accepts it.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Transform, type TransformCallback } from 'node:stream';

export class TcpProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private cut = false;
  private delayMs = 0;
  readonly port: number;

  private constructor(server: Server, port: number) {
    this.server = server;
    this.port = port;
  }

  /** Listens on a free loopback port and forwards to 127.0.0.1 at the targets' ports. */
  static async start(targets: number[]): Promise<TcpProxy> {
    const server = createServer();
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
    );
    const proxy = new TcpProxy(server, port);
    let next = 0;
    server.on('connection', (client) => proxy.forward(client, targets, next++, targets.length));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private forward(client: Socket, targets: number[], index: number, triesLeft: number): void {
    if (this.cut || triesLeft === 0) {
      client.resetAndDestroy();
      return;
    }
    client.pause();
    client.on('error', () => undefined);
    const upstream = connect(targets[index % targets.length]!, '127.0.0.1');
    let connected = false;
    upstream.once('error', () => {
      if (connected) return;
      // Refused: the next target (the client has sent nothing anywhere yet).
      upstream.destroy();
      this.forward(client, targets, index + 1, triesLeft - 1);
    });
    upstream.once('connect', () => {
      connected = true;
      this.join(client, upstream);
    });
  }

  private join(client: Socket, upstream: Socket): void {
    if (this.cut || client.destroyed) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
      return;
    }
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.once('close', () => {
        this.sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(this.delayed()).pipe(upstream);
    upstream.pipe(this.delayed()).pipe(client);
    client.resume();
  }

  /** Holds each chunk back by the delay in force when it arrives (order kept: one chunk at a time). */
  private delayed(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback) => {
        if (this.delayMs === 0) done(null, chunk);
        else setTimeout(() => done(null, chunk), this.delayMs);
      },
    });
  }

  /** Resets every open connection and refuses new ones until restore(). */
  cutAll(): void {
    this.cut = true;
    for (const socket of this.sockets) socket.resetAndDestroy();
  }

  slow(delayMs: number): void {
    this.delayMs = delayMs;
  }

  restore(): void {
    this.cut = false;
    this.delayMs = 0;
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
