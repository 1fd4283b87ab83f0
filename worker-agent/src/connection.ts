// The agent's socket to the control plane: hello → welcome → heartbeats, reconnecting with backoff whenever the
// socket drops, until stop() or until the server refuses the worker key.
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import {
  AGENT_ROUTES,
  CLOSE,
  MAX_MESSAGE_BYTES,
  encodeMessage,
  helloVersionFields,
  parseMessage,
  type AgentMessage,
  type Hardware,
  type HostLoad,
  type ServerMessage,
} from '@vp/protocol';
import type { WorkerConfig } from './config.ts';
import type { Capabilities } from './exporter-probe.ts';
import type { FolderRequests } from './folder-requests.ts';
import { readHardware, readLoad } from './hardware.ts';
import { reenrollAdvice } from './key-check.ts';
import type { Logger } from './log.ts';

/**
 * The version the agent reports in its hello: the distribution's launcher (bin/vp-worker) sets VP_AGENT_VERSION to
 * the release it came with, which the control plane compares with its own; a checkout reports its package's.
 */
export const AGENT_VERSION =
  process.env.VP_AGENT_VERSION ||
  (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface ConnectionTiming {
  /** The first reconnect waits up to this long; each failure doubles it... */
  backoffBaseMs: number;
  /** ...up to this. */
  backoffCapMs: number;
  /** A server that accepts the socket but never answers hello is treated as down. */
  welcomeTimeoutMs: number;
  /**
   * Once welcomed, a ping goes this often (or at each heartbeat, when those are closer together), and a control plane
   * heard from neither by pong nor by message for DEAD_AFTER_PINGS of them is taken for gone.
   */
  pingIntervalMs: number;
}

export const DEFAULT_TIMING: ConnectionTiming = {
  backoffBaseMs: 1000,
  backoffCapMs: 30_000,
  welcomeTimeoutMs: 10_000,
  pingIntervalMs: 2000,
};
/** Ping intervals of silence after which the connection is dropped: more than 2, so one late pong (a busy server) is not a loss. */
export const DEAD_AFTER_PINGS = 2.5;

export type Welcome = Extract<ServerMessage, { type: 'welcome' }>;

/** The agent's jobs as the connection sees them (JobManager): reported in hello, fed assignments and cancels. */
export interface ConnectionJobs {
  known(): Array<{ jobId: string; attempt: number; gpuIndexes: number[] }>;
  assign(message: Extract<ServerMessage, { type: 'job.assign' }>): Promise<void>;
  cancel(message: Extract<ServerMessage, { type: 'job.cancel' }>): void;
  /** After each welcome: deliver what was held while disconnected. */
  connected(): void;
}
/**
 * Why run() ended: stop() was called; the server refused the worker key (revoked, rotated or wrong); it
 * does not speak this agent's protocol version; another agent took over this host with the same key; or the host is
 * in the appliance-wide pool and this agent's process runtime may not run every workspace's jobs side by side.
 * Each but the first is permanent: reconnecting would not change it.
 */
export type ConnectionOutcome = 'stopped' | 'unauthorized' | 'unsupported' | 'replaced' | 'sharedProcessRuntime';
export type ConnectionState = 'connecting' | 'handshaking' | 'ready' | 'waiting' | ConnectionOutcome;

/** Close codes after which the agent stops instead of reconnecting, and what each means for it. */
const PERMANENT_CLOSES: Partial<Record<number, Exclude<ConnectionOutcome, 'stopped'>>> = {
  [CLOSE.revoked]: 'unauthorized',
  [CLOSE.unsupportedVersion]: 'unsupported',
  [CLOSE.replaced]: 'replaced',
};
const PERMANENT_MESSAGES: Record<Exclude<ConnectionOutcome, 'stopped'>, string> = {
  unauthorized: 'the control plane refused the worker key (revoked, rotated or wrong)',
  unsupported: "the control plane does not speak this agent's protocol version; upgrade the agent",
  replaced: "another agent connected with this host's key and took over; run one agent per host",
  sharedProcessRuntime:
    "this host is in the appliance-wide pool, so it runs every workspace's jobs, and the process runtime cannot keep them apart " +
    '(one OS user, no filesystem or network isolation): use the Docker runtime (runtime: docker), or, to run them anyway, ' +
    'set allowSharedProcessRuntime: true (VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME=1; install-worker.sh --allow-shared-process-runtime)',
};

/**
 * A message as a control plane of `version` reads it (it refuses unknown fields): a job.finished without the run times
 * of protocol 6 or the notStarted of protocol 8, a heartbeat without the load of protocol 7.
 */
function forVersion(message: AgentMessage, version: number): AgentMessage {
  if (message.type === 'job.finished') {
    const { notStarted, ranSeconds, endedSecondsAgo, ...older } = message;
    return {
      ...older,
      ...(version >= 6 && ranSeconds !== undefined && { ranSeconds }),
      ...(version >= 6 && endedSecondsAgo !== undefined && { endedSecondsAgo }),
      ...(version >= 8 && notStarted && { notStarted }),
    };
  }
  if (message.type === 'heartbeat' && version < 7) {
    const { load: _load, ...older } = message;
    return older;
  }
  return message;
}

/**
 * Full jitter (a uniformly random wait up to the exponential bound): after a control-plane restart, hosts
 * reconnect spread out instead of all at once.
 */
export function backoffDelay(attempt: number, timing: ConnectionTiming, random: () => number = Math.random): number {
  return Math.floor(random() * Math.min(timing.backoffCapMs, timing.backoffBaseMs * 2 ** attempt));
}

/** The socket URL under the configured server's base URL: http → ws, https → wss. */
export function connectUrl(server: string): string {
  const url = new URL(`${server}${AGENT_ROUTES.connect}`);
  url.protocol = url.protocol.replace(/^http/, 'ws');
  return url.href;
}

export class WorkerConnection extends EventEmitter<{ welcome: [Welcome]; state: [ConnectionState] }> {
  readonly #config: WorkerConfig;
  readonly #log: Logger;
  readonly #timing: ConnectionTiming;
  #jobs: ConnectionJobs | undefined;
  #folders: FolderRequests | undefined;
  /** The exporter probe's latest answer, sent after each welcome of protocol 2 or later and each time it is set. */
  #capabilities: Capabilities | undefined;
  #state: ConnectionState = 'connecting';
  #socket: WebSocket | undefined;
  #hardware: Hardware | undefined;
  /** The host's load as last read, sent with each heartbeat; a reading under way. */
  #load: HostLoad | undefined;
  #readingLoad = false;
  /** From the last welcome, so a reconnect's hello names the host record it had. */
  #hostId: string | undefined;
  /** The version the last welcome chose. */
  #protocolVersion = 1;
  /** This end's address on the socket now open to the control plane: where it reaches this host, by default. */
  #localAddress: string | undefined;
  /** Failed attempts since the last welcome; sets the backoff. */
  #attempt = 0;
  #stopping = false;
  #unauthorized = false;
  /** Set when a welcome named a pool this agent may not serve. */
  #refusedPool = false;
  #timers = new Set<NodeJS.Timeout>();
  #done: Promise<ConnectionOutcome> | undefined;
  #finish: ((outcome: ConnectionOutcome) => void) | undefined;

  constructor(config: WorkerConfig, log: Logger, timing: Partial<ConnectionTiming> = {}) {
    super();
    this.#config = config;
    this.#log = log;
    this.#timing = { ...DEFAULT_TIMING, ...timing };
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** The local address of the socket to the control plane while one is open. */
  get localAddress(): string | undefined {
    return this.#socket === undefined ? undefined : this.#localAddress;
  }

  /** Set before run(): without jobs the agent reports none and ignores assignments. */
  setJobs(jobs: ConnectionJobs): void {
    this.#jobs = jobs;
  }

  /** Set before run(): without it `folder.*` requests go unanswered (the control plane times them out). */
  setFolders(folders: FolderRequests): void {
    this.#folders = folders;
  }

  /**
   * The host's capabilities as last probed: sent now when connected, and after each later welcome. Until the first
   * call none are sent, and the control plane gives this host no export and no deployment.
   */
  setCapabilities(capabilities: Capabilities): void {
    this.#capabilities = capabilities;
    this.#sendCapabilities();
  }

  /** A version-1 control plane would refuse the message; services are protocol 3 (an older one refuses them). */
  #sendCapabilities(): void {
    if (!this.#capabilities || this.#state !== 'ready' || this.#protocolVersion < 2) return;
    const { services, ...formats } = this.#capabilities;
    this.#send({ type: 'capabilities', ...(this.#protocolVersion >= 3 ? { ...formats, services } : formats) });
  }

  /**
   * A heartbeat, on time, with the host's load as last read (protocol 7): the next reading starts as it goes, so a
   * slow one (nvidia-smi) never delays a heartbeat; a failed reading leaves the load out.
   */
  #heartbeat(socket: WebSocket): void {
    if (this.#socket !== socket || this.#state !== 'ready') return;
    const load = this.#protocolVersion >= 7 ? this.#load : undefined;
    this.send({ type: 'heartbeat', at: new Date().toISOString(), ...(load && { load }) });
    if (this.#protocolVersion < 7 || this.#readingLoad) return;
    this.#readingLoad = true;
    readLoad(this.#hardware?.gpus.length ?? 0)
      .then(
        (read) => (this.#load = read),
        (error: unknown) => {
          this.#load = undefined;
          this.#log('warn', 'could not read the host load', { error: String(error) });
        },
      )
      .finally(() => (this.#readingLoad = false));
  }

  /** Sends now when the socket is ready (welcomed); false otherwise, and the caller keeps the message. */
  send(message: AgentMessage): boolean {
    if (this.#state !== 'ready' || this.#socket?.readyState !== WebSocket.OPEN) return false;
    this.#send(forVersion(message, this.#protocolVersion));
    return true;
  }

  /** Connects and keeps connecting; resolves once stop() has closed the socket or the key was refused. */
  run(): Promise<ConnectionOutcome> {
    this.#done ??= new Promise<ConnectionOutcome>((resolve, reject) => {
      this.#finish = resolve;
      // Hardware is read once: it does not change while the agent runs, and every hello re-sends it.
      readHardware(this.#config.workDir).then((hardware) => {
        this.#hardware = hardware;
        if (this.#stopping) this.#end('stopped');
        else this.#connect();
      }, reject);
    });
    return this.#done;
  }

  /** Closes the socket (or cancels the pending reconnect) and resolves like run(). */
  stop(): Promise<ConnectionOutcome> {
    const done = this.run();
    this.#stopping = true;
    this.#clearTimers();
    const socket = this.#socket;
    if (socket?.readyState === WebSocket.OPEN) socket.close(1000, 'agent stopping');
    else if (socket?.readyState === WebSocket.CONNECTING) socket.terminate();
    else if (this.#hardware && socket === undefined) this.#end('stopped');
    // Otherwise the socket is already closing (its close event ends the run) or hardware is still being read.
    return done;
  }

  #connect(): void {
    this.#setState('connecting');
    const socket = new WebSocket(connectUrl(this.#config.server), {
      headers: { authorization: `Bearer ${this.#config.workerKey}` },
      maxPayload: MAX_MESSAGE_BYTES,
      handshakeTimeout: this.#timing.welcomeTimeoutMs,
    });
    this.#socket = socket;
    let refusedStatus: number | undefined;

    socket.on('upgrade', (response) => (this.#localAddress = response.socket.localAddress));
    socket.on('unexpected-response', (_request, response) => {
      refusedStatus = response.statusCode;
      response.resume();
      // A refused key stays refused: retrying would only hammer the server until an operator re-enrolls the host.
      if (refusedStatus === 401) this.#unauthorized = true;
      socket.terminate();
    });
    socket.on('error', (error) => {
      if (refusedStatus === undefined) this.#log('warn', 'control plane connection failed', { error: error.message });
    });
    socket.on('open', () => {
      this.#setState('handshaking');
      this.#after(this.#timing.welcomeTimeoutMs, () => {
        this.#log('warn', 'no welcome from the control plane; reconnecting', {
          timeoutMs: this.#timing.welcomeTimeoutMs,
        });
        socket.terminate();
      });
      this.#send({
        type: 'hello',
        ...helloVersionFields(),
        agentVersion: AGENT_VERSION,
        hostId: this.#hostId,
        hardware: this.#hardware!,
        maxConcurrentJobs: this.#config.maxConcurrentJobs,
        runningJobs: this.#jobs?.known() ?? [],
      });
    });
    socket.on('message', (data, isBinary) => this.#receive(socket, isBinary ? null : (data as Buffer)));
    socket.on('close', (code, reason) => {
      this.#clearTimers();
      this.#socket = undefined;
      this.#folders?.disconnected();
      const permanent = this.#unauthorized
        ? 'unauthorized'
        : this.#refusedPool
          ? 'sharedProcessRuntime'
          : PERMANENT_CLOSES[code];
      if (permanent && !this.#stopping) {
        const message =
          permanent === 'unauthorized'
            ? `${PERMANENT_MESSAGES.unauthorized}: ${reenrollAdvice(this.#config)}`
            : PERMANENT_MESSAGES[permanent];
        this.#log('error', message, { status: refusedStatus, code, reason: reason.toString() });
        this.#end(permanent);
      } else if (this.#stopping) {
        this.#end('stopped');
      } else {
        this.#reconnect(refusedStatus === undefined ? { code, reason: reason.toString() } : { status: refusedStatus });
      }
    });
  }

  /** `data` is null for a binary frame, which the protocol never uses. */
  #receive(socket: WebSocket, data: Buffer | null): void {
    const parsed =
      data === null
        ? { ok: false as const, error: 'binary frames are not part of the protocol' }
        : parseMessage(data, 'toAgent');
    if (!parsed.ok) {
      this.#log('warn', 'ignored an invalid message from the control plane', { error: parsed.error });
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case 'welcome':
        if (this.#state !== 'handshaking') {
          this.#log('warn', 'ignored a repeated welcome');
          return;
        }
        this.#welcome(socket, message);
        return;
      case 'error':
        this.#log('error', 'the control plane reported an error', { message: message.message });
        return;
      case 'job.assign':
        if (this.#jobs) void this.#jobs.assign(message);
        else this.#log('warn', 'ignored job.assign: this agent runs no jobs', { jobId: message.jobId });
        return;
      case 'job.cancel':
        this.#jobs?.cancel(message);
        return;
      case 'folder.request':
      case 'folder.credit':
      case 'folder.cancel':
        this.#folders?.handle(message);
        return;
    }
  }

  #welcome(socket: WebSocket, welcome: Welcome): void {
    this.#clearTimers();
    // Before any job can be assigned: terminate() drops whatever the server sent after its welcome.
    if (welcome.pool && this.#config.runtime === 'process' && !this.#config.allowSharedProcessRuntime) {
      this.#refusedPool = true;
      socket.terminate();
      return;
    }
    this.#attempt = 0;
    this.#hostId = welcome.hostId;
    this.#protocolVersion = welcome.protocolVersion;
    this.#log('info', 'connected to the control plane', {
      hostId: welcome.hostId,
      protocolVersion: welcome.protocolVersion,
      heartbeatSeconds: welcome.heartbeatSeconds,
    });
    // A control plane gone without a TCP close (a cable pulled, a NAT entry dropped) is noticed within seconds, not
    // heartbeats: pings go every few seconds, and one silent that long is dropped and reconnected. Its jobs run on
    // meanwhile, as across any reconnect: the hello lists them, and their ends are reported once welcomed.
    const pingMs = Math.min(this.#timing.pingIntervalMs, welcome.heartbeatSeconds * 1000);
    let heard = Date.now();
    const alive = () => (heard = Date.now());
    socket.on('pong', alive).on('message', alive);
    this.#every(pingMs, () => {
      if (Date.now() - heard > DEAD_AFTER_PINGS * pingMs) {
        this.#log('warn', 'the control plane stopped answering pings; reconnecting', { silentMs: Date.now() - heard });
        socket.terminate();
        return;
      }
      socket.ping();
    });
    this.#every(welcome.heartbeatSeconds * 1000, () => this.#heartbeat(socket));
    this.#setState('ready');
    // The probe may still be running: its answer is sent when it comes (setCapabilities).
    this.#sendCapabilities();
    this.#jobs?.connected();
    this.emit('welcome', welcome);
  }

  #reconnect(why: Record<string, unknown>): void {
    const delayMs = backoffDelay(this.#attempt++, this.#timing);
    this.#log('warn', 'disconnected from the control plane; reconnecting', { ...why, delayMs });
    this.#setState('waiting');
    this.#after(delayMs, () => this.#connect());
  }

  #send(message: AgentMessage): void {
    this.#socket?.send(encodeMessage(message));
  }

  #after(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms);
    this.#timers.add(timer);
  }

  #every(ms: number, fn: () => void): void {
    this.#timers.add(setInterval(fn, ms));
  }

  #clearTimers(): void {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #end(outcome: ConnectionOutcome): void {
    this.#setState(outcome);
    this.#finish?.(outcome);
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.emit('state', state);
  }
}
