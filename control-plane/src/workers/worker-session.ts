import type { EntityManager } from '@mikro-orm/postgresql';
import {
  MAX_MESSAGE_BYTES,
  commonVersion,
  encodeMessage,
  helloVersions,
  parseMessage,
  type AgentMessage,
  type HostLoad,
  type ServerMessage,
} from '@vp/protocol';
import type { Logger } from 'pino';
import { WebSocket, type RawData } from 'ws';
import { isDatabaseUnavailable } from '../db/database-unavailable.ts';
import { newId } from '../db/ids.ts';
import { findWorkerByKey, type WorkerIdentity } from '../hosts/worker-key-lookup.ts';
import { CLOSE } from '@vp/protocol';
import type { HostScheduler, LocalHost } from '../scheduler/host-scheduler.ts';
import { appendLogs, markAccepted, recordProgress, renewHostLeases } from '../jobs/job.store.ts';
import { reconcileHost } from '../scheduler/reconcile.ts';
import { serviceReported } from '../deployments/deployment-rollout.ts';
import { serviceOrigin } from '../deployments/deployment-service-origin.ts';
import type { FolderChannel, HostFolders } from './host-folders.ts';
import {
  SessionReplaced,
  asCurrentSession,
  endSession,
  isCurrentSession,
  recordCapabilities,
  recordHeartbeat,
  takeOverHost,
  type HostSession,
} from './host.store.ts';
import type { WorkerConnection } from './worker-connections.ts';

export const HELLO_TIMEOUT_MS = 10_000;
/** Frames that fail to parse are answered one by one; this many on one socket means a broken or hostile peer. */
export const MAX_INVALID_MESSAGES = 5;
/** Heartbeats closer together than this are accepted but not written, so a chatty agent cannot load the database. */
const HEARTBEAT_WRITE_INTERVAL_MS = 1000;
/**
 * Bytes of received frames a session holds before it stops reading its socket until they are handled: an agent
 * that sends faster than its messages are stored (a flood of 1 MiB log frames) waits on TCP instead of growing
 * this process's memory.
 */
export const MAX_PENDING_BYTES = 4 * MAX_MESSAGE_BYTES;
/** How long a message the database could not store is tried again (a restart or failover takes seconds), and how often. */
const STORE_RETRY_MS = 60_000;
const STORE_RETRY_DELAY_MS = 1000;

export interface SessionContext {
  em(): EntityManager;
  log: Logger;
  heartbeatSeconds: number;
  scheduler: HostScheduler;
  /** This process as the host sessions record it. */
  replica: string;
  folders: HostFolders;
}

/**
 * One authenticated worker socket: handshake (taking the host over and squaring its running jobs with the database),
 * heartbeats (which renew its jobs' leases), job reports handed to the scheduler's store, refusals. Messages are
 * handled one at a time in arrival order (a chain of promises), so the host row's writes land in the order the agent
 * meant them, the last one (disconnected) included. Each write happens only while this socket is the host's current
 * session: once a newer hello took the host over, on any replica, the socket is closed with CLOSE.replaced and
 * changes nothing more. Nothing here throws into the socket's handlers.
 */
export class WorkerSession implements WorkerConnection {
  readonly hostId: string;
  readonly workspaceId: string | null;
  /** Settles once the socket closed and its last write landed (shutdown waits for it before closing the pool). */
  readonly finished: Promise<void>;
  private readonly socket: WebSocket;
  private readonly key: string;
  /** The agent's address as this server sees its connection (worker-socket.ts): where its services are reached. */
  private readonly address: string | undefined;
  private readonly context: SessionContext;
  private readonly log: Logger;
  private readonly helloTimer: NodeJS.Timeout;
  private readonly session: HostSession;
  private chain: Promise<void> = Promise.resolve();
  /** Bytes of frames received and not yet handled (see MAX_PENDING_BYTES). */
  private pendingBytes = 0;
  private welcomed = false;
  private invalidMessages = 0;
  private lastHeartbeatWrite = 0;
  /** Set once welcomed: this socket as the scheduler sees it. */
  private local: LocalHost | undefined;
  /** Set once welcomed: where the agent's answers to folder requests go. */
  private folders: FolderChannel | undefined;

  constructor(
    socket: WebSocket,
    identity: WorkerIdentity,
    key: string,
    address: string | undefined,
    context: SessionContext,
  ) {
    this.hostId = identity.hostId;
    this.workspaceId = identity.workspaceId;
    this.socket = socket;
    this.key = key;
    this.address = address;
    this.context = context;
    this.session = { hostId: identity.hostId, sessionId: newId(), replica: context.replica };
    this.log = context.log.child({
      hostId: identity.hostId,
      host: identity.hostName,
      keyPrefix: identity.keyPrefix,
      sessionId: this.session.sessionId,
    });
    this.helloTimer = setTimeout(
      () => this.close(CLOSE.handshakeFailed, `no hello within ${HELLO_TIMEOUT_MS / 1000} s`),
      HELLO_TIMEOUT_MS,
    );
    socket.on('message', (data) => this.arrive(toBuffer(data)));
    // ws reports protocol violations (an oversized frame among them) here, then closes the socket itself.
    socket.on('error', (error) => this.log.warn({ err: error }, 'worker socket error'));
    this.finished = new Promise((resolve) => {
      socket.on('close', (code, reason) => {
        clearTimeout(this.helloTimer);
        this.log.info({ code, reason: reason.toString() }, 'worker disconnected');
        if (this.local) this.context.scheduler.detach(this.hostId, this.local);
        if (this.folders) this.context.folders.detach(this.folders);
        // Changes nothing when this socket never took the host over, or another has since.
        this.enqueue(() => endSession(this.context.em(), this.session));
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

  async verifySession(): Promise<void> {
    // Before its welcome a socket has not taken the host over yet: the session it would replace is still the host.
    if (!this.welcomed) return;
    try {
      if (!(await isCurrentSession(this.context.em(), this.session))) this.replaced();
    } catch (error) {
      this.log.error({ err: error }, 'could not verify a host session');
    }
  }

  private replaced(): void {
    this.log.info('another connection took this host over; closing its socket');
    this.close(CLOSE.replaced, 'replaced by a newer connection');
  }

  /** Queues a frame; past MAX_PENDING_BYTES the socket is not read again until the queue has drained below it. */
  private arrive(frame: Buffer): void {
    this.pendingBytes += frame.length;
    if (this.pendingBytes > MAX_PENDING_BYTES) this.socket.pause();
    this.enqueue(async () => {
      try {
        await this.receive(frame);
      } finally {
        this.pendingBytes -= frame.length;
        if (this.socket.isPaused && this.pendingBytes <= MAX_PENDING_BYTES) this.socket.resume();
      }
    });
  }

  private enqueue(task: () => Promise<void> | void): void {
    this.chain = this.chain
      .then(() => this.untilStored(task))
      .catch((error: unknown) => {
        if (error instanceof SessionReplaced) return this.replaced();
        this.log.error({ err: error }, 'worker message handling failed');
        // A hello that could not be stored would leave the agent waiting for a welcome: it reconnects instead.
        if (!this.welcomed) this.close(CLOSE.shuttingDown, 'the connection could not be taken; reconnect');
      });
  }

  /**
   * Runs `task` again while the database cannot be reached, up to STORE_RETRY_MS: the agent forgets a report once it
   * is sent (a job's end above all), so one dropped here would leave its job running for good. Later messages wait
   * their turn meanwhile, and the socket stops being read once MAX_PENDING_BYTES of them are waiting.
   */
  private async untilStored(task: () => Promise<void> | void): Promise<void> {
    const giveUpAt = Date.now() + STORE_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await task();
      } catch (error) {
        if (!isDatabaseUnavailable(error) || Date.now() >= giveUpAt) throw error;
        if (attempt === 1) this.log.warn({ err: error }, 'the database is unavailable; storing a worker message again');
        await new Promise((resolve) => setTimeout(resolve, STORE_RETRY_DELAY_MS));
      }
    }
  }

  private async receive(frame: Buffer): Promise<void> {
    // A report that arrived before the socket closed is still stored (the agent took it as sent); a hello is not.
    if (!this.welcomed && this.socket.readyState !== WebSocket.OPEN) return;
    const parsed = parseMessage(frame, 'toServer');
    if (!parsed.ok)
      return this.welcomed ? this.refuse(parsed.error) : this.failHandshake(parsed.error, parsed.unsupportedVersion);
    const message = parsed.message;
    if (!this.welcomed) {
      if (message.type !== 'hello') return this.failHandshake(`expected hello, got ${message.type}`);
      return this.welcome(message);
    }
    switch (message.type) {
      case 'hello':
        return this.refuse('hello was already received');
      case 'heartbeat':
        return this.heartbeat(message.load);
      case 'capabilities':
        return this.capabilities(message);
      case 'job.accepted': {
        const accepted = await this.asCurrent((tx) => markAccepted(tx, this.hostId, message.jobId));
        if (!accepted) return this.cancel(message.jobId, 'the job is not assigned to this host');
        if (accepted.cancelRequested) return this.cancel(message.jobId, 'cancelled by a user');
        return;
      }
      case 'job.log':
        await this.asCurrent((tx) => appendLogs(tx, this.hostId, message.jobId, message.stream, message.lines));
        return;
      case 'job.progress':
        return this.asCurrent((tx) => recordProgress(tx, this.hostId, message.jobId, message.progress));
      case 'job.service': {
        // Only the reported port is taken: the host is where this connection comes from.
        const origin = this.address && serviceOrigin(this.address, message.url);
        if (!origin)
          return this.log.warn(
            { jobId: message.jobId, address: this.address },
            "ignored a service: the agent's address is not an IP address",
          );
        const served = await this.asCurrent((tx) =>
          serviceReported(tx, this.context.scheduler.lifecycle, this.hostId, message.jobId, origin),
        );
        if (!served)
          this.log.info(
            { jobId: message.jobId },
            'ignored the service of a job this host does not run for a deployment',
          );
        return;
      }
      case 'job.finished': {
        const ended = await this.asCurrent((tx) =>
          this.context.scheduler.lifecycle.finishReported(tx, this.hostId, message),
        );
        if (!ended) this.log.info({ jobId: message.jobId }, 'ignored the end of a job this host no longer held');
        else if (ended.status === 'queued') {
          this.log.warn({ jobId: message.jobId, error: message.error }, 'the job could not start here; queued again');
          this.context.scheduler.couldNotStart(this.hostId, message.jobId);
        }
        this.context.scheduler.wake(this.hostId);
        return;
      }
      case 'folder.result':
      case 'folder.error':
      case 'folder.chunk':
      case 'folder.end':
        return this.folders?.deliver(message);
    }
  }

  private async welcome(hello: Extract<AgentMessage, { type: 'hello' }>): Promise<void> {
    clearTimeout(this.helloTimer);
    // The key decides which host this is; a stale id on the agent's disk is worth a note, not a refusal.
    if (hello.hostId !== undefined && hello.hostId !== this.hostId)
      this.log.warn({ claimedHostId: hello.hostId }, 'hello names another host id than its key');
    const { scheduler } = this.context;
    // The newest hello is the host: it takes the host over and its running jobs are the truth about the host's jobs
    // (the older socket's included), in one transaction, so two hellos of one host cannot interleave.
    const connected = await this.context.em().transactional(async (tx) => {
      const takeover = await takeOverHost(tx, this.session, hello);
      return (
        takeover && {
          ...takeover,
          reconciled: await reconcileHost(
            tx,
            scheduler.lifecycle,
            this.hostId,
            hello.runningJobs,
            scheduler.graceSeconds,
          ),
        }
      );
    });
    if (!connected) return this.close(CLOSE.revoked, 'host no longer exists');
    this.welcomed = true;
    this.lastHeartbeatWrite = Date.now();
    // parseMessage refused a hello without a version in common.
    const protocolVersion = commonVersion(helloVersions(hello)!)!;
    const pool = protocolVersion >= 5 ? { pool: this.workspaceId === null } : {};
    this.send({
      type: 'welcome',
      protocolVersion,
      hostId: this.hostId,
      heartbeatSeconds: this.context.heartbeatSeconds,
      ...pool,
    });
    this.log.info(
      {
        agentVersion: hello.agentVersion,
        protocolVersion,
        gpus: hello.hardware.gpus.length,
        runningJobs: hello.runningJobs.length,
        replaced: connected.replaced,
      },
      'worker connected',
    );
    const { reconciled } = connected;
    for (const jobId of reconciled.cancel) this.cancel(jobId, 'the job is no longer assigned to this host');
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.local = {
      hostId: this.hostId,
      workspaceId: this.workspaceId,
      hardware: hello.hardware,
      maxConcurrentJobs: hello.maxConcurrentJobs,
      // Until its `capabilities` arrive (never from a protocol-1 agent) the host gets no export and no service.
      exporters: new Set(),
      region: connected.region,
      services: new Set(),
      session: this.session,
      send: (message) => this.send(message),
    };
    scheduler.attach(this.local);
    this.folders = this.context.folders.attach(this.hostId, protocolVersion, (message) => this.send(message));
  }

  /** Stored for the hosts view, export and deployment requests; the scheduler offers the host the jobs it can now take. */
  private async capabilities(message: Extract<AgentMessage, { type: 'capabilities' }>): Promise<void> {
    const services = message.services ?? [];
    await this.asCurrent((tx) =>
      recordCapabilities(tx, this.hostId, {
        exporters: message.exporters,
        missingExporters: message.missingExporters,
        services,
      }),
    );
    this.log.info({ exporters: message.exporters, services }, 'worker reported its capabilities');
    if (!this.local) return;
    this.local.exporters = new Set(message.exporters);
    this.local.services = new Set(services);
    this.context.scheduler.wake(this.hostId);
  }

  private cancel(jobId: string, reason: string): void {
    this.send({ type: 'job.cancel', jobId, reason });
  }

  private async heartbeat(load: HostLoad | undefined): Promise<void> {
    const now = Date.now();
    if (now - this.lastHeartbeatWrite < HEARTBEAT_WRITE_INTERVAL_MS) return;
    this.lastHeartbeatWrite = now;
    await this.asCurrent(async (tx) => {
      await recordHeartbeat(tx, this.hostId, load);
      await renewHostLeases(tx, this.hostId, this.context.scheduler.graceSeconds);
    });
  }

  /** `work` in a transaction, while this socket is the host's current session; else SessionReplaced (which closes it). */
  private asCurrent<T>(work: (tx: EntityManager) => Promise<T>): Promise<T> {
    return asCurrentSession(this.context.em(), this.session, work);
  }

  /** Answers with the reason and keeps the socket, up to MAX_INVALID_MESSAGES refusals. */
  private refuse(reason: string): void {
    this.invalidMessages += 1;
    this.log.warn({ reason, invalidMessages: this.invalidMessages }, 'refused a worker message');
    this.send({ type: 'error', message: reason });
    if (this.invalidMessages >= MAX_INVALID_MESSAGES)
      this.close(CLOSE.tooManyInvalidMessages, 'too many invalid messages');
  }

  /**
   * The reason goes in an `error` message: a close reason is limited to 123 bytes. A hello of no version in common is
   * refused with its own close code, since reconnecting cannot help.
   */
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
