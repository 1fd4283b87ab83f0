import type { EntityManager } from '@mikro-orm/postgresql';
import { PROTOCOL_VERSION, encodeMessage, parseMessage, type AgentMessage, type ServerMessage } from '@vp/protocol';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import { findWorkerByKey, type WorkerIdentity } from '../hosts/worker-key-lookup.ts';
import { CLOSE } from '@vp/protocol';
import { markConnected, markDisconnected, recordHeartbeat } from './host-presence.ts';
import type { WorkerConnection } from './worker-connections.ts';

export const HELLO_TIMEOUT_MS = 10_000;
/** Frames that fail to parse are answered one by one; this many on one socket means a broken or hostile peer. */
export const MAX_INVALID_MESSAGES = 5;
/** Heartbeats closer together than this are accepted but not written, so a chatty agent cannot load the database. */
const HEARTBEAT_WRITE_INTERVAL_MS = 1000;

export interface SessionContext {
  em(): EntityManager;
  log: Logger;
  heartbeatSeconds: number;
  /** Forgets the session once its socket closed; true when it was still its host's current socket. */
  release(session: WorkerSession): boolean;
}

/**
 * One authenticated worker socket: handshake, heartbeats, refusals. Messages are handled one at a
 * time in arrival order (a chain of promises), so the host row's writes land in the order the agent
 * meant them, the last one (disconnected) included. Nothing here throws into the socket's handlers.
 */
export class WorkerSession implements WorkerConnection {
  readonly hostId: string;
  /** Settles once the socket closed and its last write landed (shutdown waits for it before closing the pool). */
  readonly finished: Promise<void>;
  private readonly socket: WebSocket;
  private readonly key: string;
  private readonly context: SessionContext;
  private readonly log: Logger;
  private readonly helloTimer: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();
  private welcomed = false;
  private invalidMessages = 0;
  private lastHeartbeatWrite = 0;

  constructor(socket: WebSocket, identity: WorkerIdentity, key: string, context: SessionContext) {
    this.hostId = identity.hostId;
    this.socket = socket;
    this.key = key;
    this.context = context;
    this.log = context.log.child({ hostId: identity.hostId, host: identity.hostName, keyPrefix: identity.keyPrefix });
    this.helloTimer = setTimeout(() => this.close(CLOSE.handshakeFailed, `no hello within ${HELLO_TIMEOUT_MS / 1000} s`), HELLO_TIMEOUT_MS);
    socket.on('message', (data) => this.enqueue(() => this.receive(toBuffer(data))));
    // ws reports protocol violations (an oversized frame among them) here, then closes the socket itself.
    socket.on('error', (error) => this.log.warn({ err: error }, 'worker socket error'));
    this.finished = new Promise((resolve) => {
      socket.on('close', (code, reason) => {
        clearTimeout(this.helloTimer);
        this.log.info({ code, reason: reason.toString() }, 'worker disconnected');
        if (this.context.release(this)) this.enqueue(() => markDisconnected(this.context.em(), this.hostId));
        void this.chain.then(resolve);
      });
    });
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  /** For a peer that does not answer the closing handshake. */
  terminate(): void {
    this.socket.terminate();
  }

  async verifyKey(): Promise<void> {
    try {
      const identity = await findWorkerByKey(this.context.em(), this.key);
      if (identity?.hostId === this.hostId) return;
      this.log.info('worker key revoked; closing its socket');
      this.close(CLOSE.revoked, 'worker key revoked');
    } catch (error) {
      this.log.error({ err: error }, 'could not verify a worker key');
    }
  }

  private enqueue(task: () => Promise<void> | void): void {
    this.chain = this.chain.then(task).catch((error: unknown) => this.log.error({ err: error }, 'worker message handling failed'));
  }

  private async receive(frame: Buffer): Promise<void> {
    if (this.socket.readyState !== WebSocket.OPEN) return;
    const parsed = parseMessage(frame, 'toServer');
    if (!parsed.ok) return this.welcomed ? this.refuse(parsed.error) : this.failHandshake(parsed.error, isOtherProtocolVersion(frame));
    const message = parsed.message;
    if (!this.welcomed) {
      if (message.type !== 'hello') return this.failHandshake(`expected hello, got ${message.type}`);
      return this.welcome(message);
    }
    switch (message.type) {
      case 'hello':
        return this.refuse('hello was already received');
      case 'heartbeat':
        return this.heartbeat();
      default:
        // The scheduler hooks in here: job.accepted / job.log / job.progress / job.finished update the job's
        // attempt, and welcome()'s hello.runningJobs reconciles what the agent still runs after a reconnect.
        this.log.warn({ type: message.type }, 'worker message not supported yet');
        this.send({ type: 'error', message: `${message.type} is not supported yet` });
    }
  }

  private async welcome(hello: Extract<AgentMessage, { type: 'hello' }>): Promise<void> {
    clearTimeout(this.helloTimer);
    // The key decides which host this is; a stale id on the agent's disk is worth a note, not a refusal.
    if (hello.hostId !== undefined && hello.hostId !== this.hostId) this.log.warn({ claimedHostId: hello.hostId }, 'hello names another host id than its key');
    const now = new Date();
    if (!(await markConnected(this.context.em(), this.hostId, hello.hardware, now))) return this.close(CLOSE.revoked, 'host no longer exists');
    this.welcomed = true;
    this.lastHeartbeatWrite = now.getTime();
    this.send({ type: 'welcome', protocolVersion: PROTOCOL_VERSION, hostId: this.hostId, heartbeatSeconds: this.context.heartbeatSeconds });
    this.log.info({ agentVersion: hello.agentVersion, gpus: hello.hardware.gpus.length }, 'worker connected');
  }

  /** The server's clock is recorded, not the agent's `at`: hosts' clocks may drift, liveness is judged here. */
  private async heartbeat(): Promise<void> {
    const now = Date.now();
    if (now - this.lastHeartbeatWrite < HEARTBEAT_WRITE_INTERVAL_MS) return;
    this.lastHeartbeatWrite = now;
    await recordHeartbeat(this.context.em(), this.hostId, new Date(now));
  }

  /** Answers with the reason and keeps the socket, up to MAX_INVALID_MESSAGES refusals. */
  private refuse(reason: string): void {
    this.invalidMessages += 1;
    this.log.warn({ reason, invalidMessages: this.invalidMessages }, 'refused a worker message');
    this.send({ type: 'error', message: reason });
    if (this.invalidMessages >= MAX_INVALID_MESSAGES) this.close(CLOSE.tooManyInvalidMessages, 'too many invalid messages');
  }

  /** The reason goes in an `error` message: a close reason is limited to 123 bytes. */
  private failHandshake(reason: string, otherVersion = false): void {
    this.log.warn({ reason }, 'worker handshake failed');
    this.send({ type: 'error', message: reason });
    if (otherVersion) this.close(CLOSE.unsupportedVersion, 'unsupported protocol version');
    else this.close(CLOSE.handshakeFailed, 'handshake failed');
  }

  private send(message: ServerMessage): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(encodeMessage(message));
  }
}

function toBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** A hello from another protocol version: refused with its own close code, since reconnecting cannot help. */
function isOtherProtocolVersion(frame: Buffer): boolean {
  try {
    const value = JSON.parse(frame.toString('utf8')) as { type?: unknown; protocolVersion?: unknown } | null;
    return value?.type === 'hello' && value.protocolVersion !== PROTOCOL_VERSION;
  } catch {
    return false;
  }
}
