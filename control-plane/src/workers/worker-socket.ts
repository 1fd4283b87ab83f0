import type { IncomingMessage, Server } from 'node:http';
import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AGENT_ROUTES, MAX_MESSAGE_BYTES } from '@vp/protocol';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Notifications } from '../db/notifications.ts';
import type { Orm } from '../db/orm.ts';
import { newId } from '../db/ids.ts';
import { WORKER_KEYS_CHANNEL, findWorkerByKey, type WorkerIdentity } from '../hosts/worker-key-lookup.ts';
import { CLOSE } from '@vp/protocol';
import type { HostScheduler } from '../scheduler/host-scheduler.ts';
import type { HostFolders } from './host-folders.ts';
import { HOST_SESSIONS_CHANNEL } from './host.store.ts';
import { WorkerConnections } from './worker-connections.ts';
import { WorkerSession } from './worker-session.ts';

/** How long shutdown waits for agents to answer the closing handshake before dropping their sockets. */
const CLOSE_GRACE_MS = 3000;

/**
 * The worker agents' WebSocket endpoint on the control plane's HTTP server. The worker key is checked
 * before the upgrade completes, so a refused client never gets a socket; a revoked key (announced on
 * WORKER_KEYS_CHANNEL by any replica) closes its host's socket at once, and so does a newer session of the
 * same host on any replica (HOST_SESSIONS_CHANNEL), with CLOSE.replaced.
 */
export class WorkerGateway {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  private readonly connections = new WorkerConnections<WorkerSession>();
  /** This process as the host sessions record it. */
  readonly replica = newId();
  private closing = false;
  private readonly orm: Orm;
  private readonly log: Logger;
  private readonly heartbeatSeconds: number;
  private readonly scheduler: HostScheduler;
  private readonly folders: HostFolders;
  private readonly trustProxy: boolean;

  constructor(
    orm: Orm,
    log: Logger,
    options: { heartbeatSeconds: number; scheduler: HostScheduler; folders: HostFolders; trustProxy: boolean },
  ) {
    this.orm = orm;
    this.log = log.child({ component: 'worker-socket' });
    this.heartbeatSeconds = options.heartbeatSeconds;
    this.scheduler = options.scheduler;
    this.folders = options.folders;
    this.trustProxy = options.trustProxy;
  }

  /** Register before `notifications.start()`, which LISTENs on the channels known then. */
  listen(notifications: Notifications): void {
    notifications.on(WORKER_KEYS_CHANNEL, (hostId) =>
      this.connections.ofHost(hostId).forEach((connection) => void connection.verifyKey()),
    );
    notifications.on(HOST_SESSIONS_CHANNEL, (hostId) =>
      this.connections.ofHost(hostId).forEach((connection) => void connection.verifySession()),
    );
    // Revocations and takeovers may have been missed while the LISTEN connection was down.
    notifications.onReconnect(() =>
      this.connections.all().forEach((connection) => {
        void connection.verifyKey();
        void connection.verifySession();
      }),
    );
  }

  attach(server: Server): void {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrade(req, socket, head));
  }

  /** Closes every worker socket (1001) and waits for their last writes; call before the pool closes. */
  async close(): Promise<void> {
    this.closing = true;
    const sessions = this.connections.all();
    for (const session of sessions) session.close(CLOSE.shuttingDown, 'server shutting down');
    const grace = setTimeout(() => sessions.forEach((session) => session.terminate()), CLOSE_GRACE_MS);
    await Promise.all(sessions.map((session) => session.finished));
    clearTimeout(grace);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // A client that goes away during the key lookup must not take the process down with an unhandled error.
    const onError = () => socket.destroy();
    socket.on('error', onError);
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== AGENT_ROUTES.connect)
      return reject(socket, 404, 'Not Found');
    if (this.closing) return reject(socket, 503, 'Service Unavailable');
    const key = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!key) return reject(socket, 401, 'Unauthorized');
    findWorkerByKey(this.orm.em.fork() as EntityManager, key).then(
      (identity) => {
        if (!identity) return reject(socket, 401, 'Unauthorized');
        if (this.closing) return reject(socket, 503, 'Service Unavailable');
        socket.off('error', onError);
        this.wss.handleUpgrade(req, socket, head, (ws) =>
          this.open(ws, identity, key, agentAddress(req, this.trustProxy)),
        );
      },
      (error: unknown) => {
        this.log.error({ err: error }, 'worker key lookup failed');
        reject(socket, 503, 'Service Unavailable');
      },
    );
  }

  private open(ws: WebSocket, identity: WorkerIdentity, key: string, address: string | undefined): void {
    const session = new WorkerSession(ws, identity, key, address, {
      em: () => this.orm.em.fork() as EntityManager,
      log: this.log,
      heartbeatSeconds: this.heartbeatSeconds,
      scheduler: this.scheduler,
      replica: this.replica,
      folders: this.folders,
    });
    this.connections.add(session);
    void session.finished.then(() => this.connections.delete(session));
  }
}

/**
 * The agent's address as this server sees its connection: the socket's peer or, behind a trusted proxy (TRUST_PROXY),
 * the last X-Forwarded-For entry, the one that proxy added (those before it are whatever the agent sent).
 */
function agentAddress(req: IncomingMessage, trustProxy: boolean): string | undefined {
  const forwarded = trustProxy ? req.headersDistinct['x-forwarded-for']?.at(-1)?.split(',').at(-1)?.trim() : undefined;
  const address = forwarded ?? req.socket.remoteAddress;
  return address && isIP(address) ? address : undefined;
}

/** Answers the upgrade request with a plain HTTP status and no socket. */
function reject(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed) return;
  const auth = status === 401 ? 'WWW-Authenticate: Bearer\r\n' : '';
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${text}\r\n${auth}Connection: close\r\nContent-Length: 0\r\n\r\n`);
}
