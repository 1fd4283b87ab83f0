// The control plane's end of the shared-folders protocol (protocol 4, @vp/protocol folders.ts): asks a connected
// host's agent to list or read one of the folders its operator shares, over the host's worker socket, held by this
// process or by another replica (through the relay, host-folder-relay.ts). A read is a stream that grants the agent credit as it is consumed, so a slow reader holds the agent back
// instead of filling this process's memory.
import { Readable } from 'node:stream';
import {
  FOLDER_CHUNK_BYTES,
  type AgentMessage,
  type FolderOp,
  type FolderResult,
  type ServerMessage,
} from '@vp/protocol';
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../db/ids.ts';
import type { Notifications } from '../db/notifications.ts';
import { connectedHostReplica } from './host.store.ts';

/** How long an agent may take to answer a request, or to send a read's next chunk once it has credit. */
export const FOLDER_TIMEOUT_MS = 30_000;
export const FIRST_FOLDER_PROTOCOL = 4;

type FolderReply = Extract<AgentMessage, { type: `folder.${string}` }>;

/**
 * offline: no socket of the host here (or it dropped mid-request); outdated: its agent predates shared folders;
 * timeout: it did not answer in time; the others are the agent's refusals (FOLDER_ERRORS).
 */
export class HostFolderError extends Error {
  readonly kind: 'offline' | 'outdated' | 'timeout' | 'denied' | 'missing' | 'tooLarge' | 'failed';

  constructor(kind: HostFolderError['kind'], message: string) {
    super(message);
    this.kind = kind;
  }
}

interface Pending {
  reply(message: FolderReply): void;
  fail(error: HostFolderError): void;
}

/** One worker socket as the folder requests see it; the session feeds it the agent's folder.* messages. */
export class FolderChannel {
  readonly hostId: string;
  readonly protocolVersion: number;
  readonly send: (message: ServerMessage) => void;
  readonly pending = new Map<string, Pending>();

  constructor(hostId: string, protocolVersion: number, send: (message: ServerMessage) => void) {
    this.hostId = hostId;
    this.protocolVersion = protocolVersion;
    this.send = send;
  }

  deliver(message: FolderReply): void {
    this.pending.get(message.requestId)?.reply(message);
  }

  closed(): void {
    for (const pending of this.pending.values()) pending.fail(offline(this.hostId, 'its connection dropped'));
  }
}

/**
 * The relay to the worker sockets other replicas hold (FolderRelay, host-folder-relay.ts), built by the composition
 * root around this process's own channels: the relay uses this module, not the other way round.
 */
export interface FolderRelayLink {
  readonly replica: string;
  listen(notifications: Notifications): void;
  channelTo(hostId: string, owner: string): FolderChannel;
}

/** This process's worker sockets that can answer folder requests (the newest one of each host), and the relay to the others'. */
export class HostFolders {
  private readonly channels = new Map<string, FolderChannel>();
  private readonly timeoutMs: number;
  private readonly fork: () => EntityManager;
  private relay: FolderRelayLink | undefined;

  constructor(fork: () => EntityManager, options: { timeoutMs?: number } = {}) {
    this.fork = fork;
    this.timeoutMs = options.timeoutMs ?? FOLDER_TIMEOUT_MS;
  }

  /** Relays requests to and from other replicas through the relay `relay` builds over this process's channels. Before `notifications.start()`. */
  listen(
    notifications: Notifications,
    relay: (local: (hostId: string) => FolderChannel | undefined) => FolderRelayLink,
  ): void {
    this.relay = relay((hostId) => this.channels.get(hostId));
    this.relay.listen(notifications);
  }

  /** A welcomed session of the host: it answers the host's requests from now on. */
  attach(hostId: string, protocolVersion: number, send: (message: ServerMessage) => void): FolderChannel {
    const channel = new FolderChannel(hostId, protocolVersion, send);
    this.channels.set(hostId, channel);
    return channel;
  }

  detach(channel: FolderChannel): void {
    if (this.channels.get(channel.hostId) === channel) this.channels.delete(channel.hostId);
    channel.closed();
  }

  /** A listing (or the shared folders): the agent's one answer. */
  async ask(hostId: string, op: Exclude<FolderOp, { kind: 'read' }>): Promise<FolderResult> {
    const channel = await this.channelOf(hostId);
    const requestId = newId();
    return new Promise<FolderResult>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          done(
            new HostFolderError('timeout', `worker host ${hostId} did not answer within ${this.timeoutMs / 1000} s`),
          ),
        this.timeoutMs,
      );
      const done = (error: HostFolderError | undefined, result?: FolderResult) => {
        clearTimeout(timer);
        channel.pending.delete(requestId);
        if (error) reject(error);
        else resolve(result!);
      };
      channel.pending.set(requestId, {
        reply: (message) =>
          done(
            message.type === 'folder.result' ? undefined : refusal(message),
            message.type === 'folder.result' ? message.result : undefined,
          ),
        fail: (error) => done(error),
      });
      channel.send({ type: 'folder.request', requestId, op });
    });
  }

  /** A file's bytes: resolves once the agent opened it (with its size), streams as its chunks arrive. */
  async read(hostId: string, op: Extract<FolderOp, { kind: 'read' }>, signal?: AbortSignal): Promise<Readable> {
    return new FolderRead(await this.channelOf(hostId), op, this.timeoutMs, signal).opened;
  }

  private async channelOf(hostId: string): Promise<FolderChannel> {
    const channel = this.channels.get(hostId);
    if (!channel) {
      const host = await connectedHostReplica(this.fork(), hostId);
      if (!host?.session_replica || !this.relay || host.session_replica === this.relay.replica)
        throw offline(hostId, 'its agent is not connected');
      return this.relay.channelTo(hostId, host.session_replica);
    }
    if (channel.protocolVersion < FIRST_FOLDER_PROTOCOL)
      throw new HostFolderError(
        'outdated',
        `the agent of worker host ${hostId} is too old to share folders; upgrade it`,
      );
    return channel;
  }
}

/** One read's stream: credit goes back to the agent as chunks are consumed; it ends at folder.end. */
class FolderRead extends Readable {
  readonly opened: Promise<Readable>;
  private readonly channel: FolderChannel;
  private readonly requestId = newId();
  private readonly maxBytes: number;
  private readonly timer: NodeJS.Timeout;
  private settle!: { resolve: (stream: Readable) => void; reject: (error: Error) => void };
  /** Chunks received whose credit has not been returned yet. */
  private owed = 0;
  private received = 0;
  private ended = false;
  /** Set once the agent opened the file: errors go to the stream's reader from then on, to the opener before. */
  private isOpen = false;

  constructor(
    channel: FolderChannel,
    op: Extract<FolderOp, { kind: 'read' }>,
    timeoutMs: number,
    signal?: AbortSignal,
  ) {
    super({ highWaterMark: FOLDER_CHUNK_BYTES });
    this.channel = channel;
    this.maxBytes = op.maxBytes;
    this.opened = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.timer = setTimeout(
      () => this.fail(new HostFolderError('timeout', `worker host ${channel.hostId} stopped sending ${op.key}`)),
      timeoutMs,
    );
    channel.pending.set(this.requestId, { reply: (message) => this.reply(message), fail: (error) => this.fail(error) });
    channel.send({ type: 'folder.request', requestId: this.requestId, op });
    if (signal?.aborted) this.fail(signal.reason as Error);
    else signal?.addEventListener('abort', () => this.fail(signal.reason as Error), { once: true });
  }

  override _read(): void {
    if (this.owed === 0 || this.ended) return;
    this.channel.send({ type: 'folder.credit', requestId: this.requestId, chunks: this.owed });
    this.owed = 0;
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stop();
    if (!this.ended) this.channel.send({ type: 'folder.cancel', requestId: this.requestId });
    this.ended = true;
    this.settle.reject(offline(this.channel.hostId, 'the read was cancelled'));
    callback(error);
  }

  private reply(message: FolderReply): void {
    this.timer.refresh();
    if (message.type === 'folder.result') {
      this.isOpen = true;
      this.settle.resolve(this);
    } else if (message.type === 'folder.error') this.fail(refusal(message));
    else if (message.type === 'folder.end') {
      this.ended = true;
      this.stop();
      this.push(null);
    } else {
      const data = Buffer.from(message.data, 'base64');
      this.received += data.length;
      // The agent checks this too; a host is not trusted to.
      if (this.received > this.maxBytes)
        return this.fail(new HostFolderError('tooLarge', `the file is larger than ${this.maxBytes} bytes`));
      this.owed += 1;
      if (this.push(data)) this._read();
    }
  }

  private fail(error: Error): void {
    this.settle.reject(error);
    this.destroy(this.isOpen ? error : undefined);
  }

  private stop(): void {
    clearTimeout(this.timer);
    this.channel.pending.delete(this.requestId);
  }
}

function refusal(message: FolderReply): HostFolderError {
  if (message.type === 'folder.error') return new HostFolderError(message.error, message.message);
  return new HostFolderError('failed', `the agent answered ${message.type} out of turn`);
}

const offline = (hostId: string, why: string) =>
  new HostFolderError('offline', `worker host ${hostId} is offline (${why}); start its agent and try again`);
