// Folder requests for a host whose worker socket another control-plane replica holds: the messages of both ways go
// through PostgreSQL (a row in host_folder_relay for the replica they are for, and a NOTIFY naming it), and the
// replica holding the socket passes them on to the agent and back. Credit travels the same way, so a read still
// moves only as fast as its reader consumes it, whichever replica the reader is on.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AgentMessage, ServerMessage } from '@vp/protocol';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import {
  announceRelayMessages,
  dropStaleRelayMessages,
  enqueueRelayMessage,
  takeRelayMessages,
} from './host-folder-relay.store.ts';
import { FolderChannel, FIRST_FOLDER_PROTOCOL, HostFolderError } from './host-folders.ts';

/** NOTIFY channel whose payload is the replica that has relayed messages waiting. */
export const FOLDER_RELAY_CHANNEL = 'vp_host_folder_relay';
/** Messages left behind by a replica that went away are dropped after this long. */
const STALE_SECONDS = 300;

type Outbound = Extract<ServerMessage, { type: `folder.${string}` }>;
type Reply = Extract<AgentMessage, { type: `folder.${string}` }>;
/** A message for the host's agent, one of its replies, or why a request could not reach it. */
type Envelope = { hostId: string; from: string } & (
  { message: Outbound | Reply } | { requestId: string; failure: { kind: HostFolderError['kind']; message: string } }
);

export class FolderRelay {
  readonly replica: string;
  private readonly fork: () => EntityManager;
  private readonly local: (hostId: string) => FolderChannel | undefined;
  private readonly log: Logger;
  /** The channels of this replica's requests to hosts held elsewhere, by `<replica>/<host>`. */
  private readonly remote = new Map<string, FolderChannel>();
  /** Posts and drains each in order, so a read's chunks arrive as they were sent. */
  private posting: Promise<void> = Promise.resolve();
  private draining: Promise<void> = Promise.resolve();

  constructor(
    fork: () => EntityManager,
    replica: string,
    local: (hostId: string) => FolderChannel | undefined,
    log: Logger,
  ) {
    this.fork = fork;
    this.replica = replica;
    this.local = local;
    this.log = log.child({ component: 'folder-relay' });
  }

  /** Register before `notifications.start()`. */
  listen(notifications: Notifications): void {
    notifications.on(FOLDER_RELAY_CHANNEL, (replica) => replica === this.replica && this.drain());
    notifications.onReconnect(() => this.drain());
  }

  /** Where requests to `hostId`, whose socket `owner` holds, are sent. */
  channelTo(hostId: string, owner: string): FolderChannel {
    const key = `${owner}/${hostId}`;
    let channel = this.remote.get(key);
    if (!channel) {
      channel = new FolderChannel(hostId, FIRST_FOLDER_PROTOCOL, (message) =>
        this.post(owner, { hostId, from: this.replica, message: message as Outbound }),
      );
      this.remote.set(key, channel);
    }
    return channel;
  }

  private post(to: string, envelope: Envelope): void {
    this.posting = this.posting
      .then(async () => {
        await enqueueRelayMessage(this.fork(), to, JSON.stringify(envelope));
        await announceRelayMessages(this.fork(), FOLDER_RELAY_CHANNEL, to);
      })
      .catch((error: unknown) => this.log.error({ err: error }, 'relaying a folder message failed'));
  }

  private drain(): void {
    this.draining = this.draining
      .then(async () => {
        const rows = await takeRelayMessages(this.fork(), this.replica);
        for (const row of rows.sort((a, b) => Number(a.id) - Number(b.id)))
          this.receive(JSON.parse(row.payload) as Envelope);
        await dropStaleRelayMessages(this.fork(), STALE_SECONDS);
      })
      .catch((error: unknown) => this.log.error({ err: error }, 'reading relayed folder messages failed'));
  }

  private receive(envelope: Envelope): void {
    const mine = this.remote.get(`${envelope.from}/${envelope.hostId}`);
    if ('failure' in envelope)
      return mine?.pending
        .get(envelope.requestId)
        ?.fail(new HostFolderError(envelope.failure.kind, envelope.failure.message));
    const { message } = envelope;
    if (message.type === 'folder.request' || message.type === 'folder.credit' || message.type === 'folder.cancel')
      return this.serve(envelope.from, envelope.hostId, message);
    mine?.deliver(message);
  }

  /** A request of another replica for a host whose socket this one holds: to the agent, and its replies back. */
  private serve(from: string, hostId: string, message: Outbound): void {
    const channel = this.local(hostId);
    const back = (reply: Reply) => this.post(from, { hostId, from: this.replica, message: reply });
    if (message.type === 'folder.request') {
      const refuse = (error: HostFolderError) =>
        this.post(from, {
          hostId,
          from: this.replica,
          requestId: message.requestId,
          failure: { kind: error.kind, message: error.message },
        });
      if (!channel)
        return refuse(
          new HostFolderError(
            'offline',
            `worker host ${hostId} is offline (its connection dropped); start its agent and try again`,
          ),
        );
      if (channel.protocolVersion < FIRST_FOLDER_PROTOCOL)
        return refuse(
          new HostFolderError('outdated', `the agent of worker host ${hostId} is too old to share folders; upgrade it`),
        );
      const last = (reply: Reply) =>
        reply.type === 'folder.error' ||
        reply.type === 'folder.end' ||
        (reply.type === 'folder.result' && message.op.kind !== 'read');
      channel.pending.set(message.requestId, {
        reply: (reply) => {
          if (last(reply)) channel.pending.delete(message.requestId);
          back(reply);
        },
        fail: (error) => {
          channel.pending.delete(message.requestId);
          refuse(error);
        },
      });
    }
    if (message.type === 'folder.cancel') channel?.pending.delete(message.requestId);
    channel?.send(message);
  }
}
