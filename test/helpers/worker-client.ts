// A scripted worker agent: a plain `ws` client speaking the protocol by hand, so tests can send exactly the
// frames they mean (fake GPUs, malformed messages) to a real control plane.
import { AGENT_ROUTES, PROTOCOL_VERSION, type Hardware, type ServerMessage } from '@vp/protocol';
import { WebSocket, type RawData } from 'ws';
import { RELEASE_VERSION } from '../../control-plane/src/release-version.ts';
import { call } from './server.ts';

export const testHardware: Hardware = {
  cpu: { model: 'Test CPU', cores: 8 },
  memoryBytes: 64 * 2 ** 30,
  diskFreeBytes: 500 * 2 ** 30,
  gpus: [
    { index: 0, model: 'NVIDIA GeForce RTX 4090', typeId: 'rtx-4090', memoryMiB: 24_564, driverVersion: '550.54' },
  ],
  cpuOnly: false,
};

export const helloFrame = (overrides: Record<string, unknown> = {}) => ({
  type: 'hello',
  protocolVersion: PROTOCOL_VERSION,
  // An agent of this release, as the control plane sees its own.
  agentVersion: RELEASE_VERSION,
  hardware: testHardware,
  runningJobs: [],
  ...overrides,
});

/** Connects a pool host (or one of `workspace`; in `region`, else every region) through vpctl's service and enrolls it over HTTP. */
export async function enrollHost(
  server: {
    url: string;
    services(): {
      hosts: { connect(name: string, workspace?: string, region?: string): Promise<{ enrollmentToken: string }> };
    };
  },
  name: string,
  workspace?: string,
  region?: string,
): Promise<{ hostId: string; workerKey: string }> {
  const { enrollmentToken } = await server.services().hosts.connect(name, workspace, region);
  return (
    await call<{ hostId: string; workerKey: string }>(server, 'POST', '/api/hosts/enroll', {
      body: { token: enrollmentToken },
    })
  ).body;
}

/** A client socket that records what the server sends and how it ends. */
export class WorkerClient {
  readonly ws: WebSocket;
  private readonly inbox: ServerMessage[] = [];
  private waiting: Array<() => void> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Resolves to 101 once open, or the refused upgrade's HTTP status. */
  readonly upgraded: Promise<number>;

  /** `localAddress`: the address the socket connects from (127.0.0.2: another host, as the control plane sees it). */
  constructor(
    target: { url: string },
    key: string | undefined,
    options: { path?: string; localAddress?: string; headers?: Record<string, string> } = {},
  ) {
    const url = `${target.url.replace(/^http/, 'ws')}${options.path ?? AGENT_ROUTES.connect}`;
    const headers = { ...options.headers, ...(key !== undefined && { authorization: `Bearer ${key}` }) };
    this.ws = new WebSocket(url, { headers, ...(options.localAddress && { localAddress: options.localAddress }) });
    this.ws.on('message', (data) => {
      this.inbox.push(JSON.parse(frameText(data)) as ServerMessage);
      this.waiting.forEach((wake) => wake());
      this.waiting = [];
    });
    this.upgraded = new Promise((resolve) => {
      this.ws.once('open', () => resolve(101));
      this.ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      this.ws.once('error', () => resolve(0));
    });
    this.closed = new Promise((resolve) =>
      this.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    );
  }

  send(message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  async next(timeoutMs = 10_000): Promise<ServerMessage> {
    const deadline = Date.now() + timeoutMs;
    while (this.inbox.length === 0) {
      if (Date.now() > deadline) throw new Error('no message from the server in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        this.waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.inbox.shift()!;
  }

  /** Heartbeats every `ms` until the socket closes, as a live agent does (its jobs' leases are renewed by them). */
  beat(ms = 500): this {
    const timer = setInterval(
      () => this.ws.readyState === WebSocket.OPEN && this.send({ type: 'heartbeat', at: new Date().toISOString() }),
      ms,
    );
    this.ws.once('close', () => clearInterval(timer));
    return this;
  }

  /** The next message of `type`, skipping others. */
  async nextOf<T extends ServerMessage['type']>(
    type: T,
    timeoutMs = 10_000,
  ): Promise<Extract<ServerMessage, { type: T }>> {
    for (;;) {
      const message = await this.next(timeoutMs);
      if (message.type === type) return message as Extract<ServerMessage, { type: T }>;
    }
  }

  /** Nothing arrives for `ms`. */
  async quiet(ms: number): Promise<boolean> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.inbox.length === 0;
  }

  /** Connects and completes the handshake with `hello` (overrides merged into the default frame). */
  static async welcomed(
    target: { url: string },
    key: string,
    hello: Record<string, unknown> = {},
    options: { localAddress?: string; headers?: Record<string, string> } = {},
  ): Promise<{ client: WorkerClient; welcome: ServerMessage }> {
    const client = new WorkerClient(target, key, options);
    if ((await client.upgraded) !== 101) throw new Error('worker socket refused');
    client.send(helloFrame(hello));
    return { client, welcome: await client.next() };
  }
}

/** A frame's text: `ws` hands a message over as one buffer, a list of fragments or an ArrayBuffer. */
function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  return (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString('utf8');
}
