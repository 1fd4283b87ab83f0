/**
 * Simulated worker agents for `npm run bench:fleet`, many in one process (the bench forks a few of these): each is a
 * `ws` client speaking the real protocol (@vp/protocol) to a control-plane replica as `vp-worker` does
 * (worker-agent/src/connection.ts and job-manager.ts), without a runtime: hello with its hardware (4 fake GPUs),
 * `capabilities` after the welcome, a heartbeat with its load every `heartbeatSeconds` and a ping every 2 s, and for
 * each `job.assign` a `job.accepted`, one `job.log` batch and, after the simulated run time the job's spec asks for
 * (FLEET_SECONDS in its env), `job.finished` completed with its `ranSeconds`; a `job.cancel` ends it cancelled.
 *
 * Driven by the bench over IPC (FleetCommand below): `connect` opens the sockets and answers `connected` once every
 * agent is welcomed; `report` answers with every assignment each agent received (when, and since when the GPUs or CPU
 * slot it got had been free) and the reconnects seen; `stop` closes the sockets and exits.
 */
import { performance } from 'node:perf_hooks';
import {
  AGENT_ROUTES,
  MAX_MESSAGE_BYTES,
  encodeMessage,
  helloVersionFields,
  parseMessage,
  type AgentMessage,
  type Hardware,
  type ServerMessage,
} from '@vp/protocol';
import { WebSocket, type RawData } from 'ws';
import { AGENT_VERSION } from '../worker-agent/src/connection.ts';

/** One simulated host: its worker key, the replica it connects to and its GPUs. */
export interface SimHost {
  index: number;
  key: string;
  /** Base URL of its replica, and that replica's number. */
  url: string;
  replica: number;
  gpuType: string;
  gpuModel: string;
  gpuMemoryMiB: number;
  gpus: number;
}

/** One job.assign as the agent received it. */
export interface Assignment {
  jobId: string;
  host: number;
  replica: number;
  /** Epoch ms the frame arrived. */
  at: number;
  /** Epoch ms since when every GPU (or the CPU slot) it got had been free here: the welcome, or the end of the job before. */
  freeSince: number;
  gpus: number;
}

export type FleetCommand = { type: 'connect'; hosts: SimHost[] } | { type: 'report' } | { type: 'stop' };
export type FleetReply =
  | { type: 'connected'; agents: number; ms: number }
  | { type: 'report'; assignments: Assignment[]; reconnects: number; errors: string[] };

const PING_MS = 2000;
/** Pause before reconnecting a dropped socket (the real agent backs off with jitter from 1 s). */
const RECONNECT_MS = 1000;

const assignments: Assignment[] = [];
const errors: string[] = [];
let reconnects = 0;
let stopping = false;
const agents: SimAgent[] = [];

function note(error: string): void {
  if (errors.length < 20) errors.push(error);
}

class SimAgent {
  private socket: WebSocket | undefined;
  private readonly hardware: Hardware;
  /** Epoch ms each GPU index has been free since; undefined while a job holds it. */
  private readonly gpuFreeSince: Array<number | undefined>;
  /** The CPU slot likewise (jobs without GPUs). */
  private cpuFreeSince: number | undefined;
  private readonly jobs = new Map<
    string,
    { attempt: number; timer: NodeJS.Timeout; startedAt: number; gpuIndexes: number[] }
  >();
  private readonly timers = new Set<NodeJS.Timeout>();
  private welcomed = false;
  private hostId: string | undefined;
  private onWelcome: (() => void) | undefined;
  private readonly host: SimHost;

  constructor(host: SimHost) {
    this.host = host;
    this.hardware = {
      cpu: { model: 'Fleet simulation CPU', cores: 64 },
      memoryBytes: 512 * 2 ** 30,
      diskFreeBytes: 2 * 2 ** 40,
      gpus: Array.from({ length: host.gpus }, (_, index) => ({
        index,
        model: host.gpuModel,
        typeId: host.gpuType,
        memoryMiB: host.gpuMemoryMiB,
        driverVersion: '550.54.15',
      })),
      cpuOnly: host.gpus === 0,
    };
    this.gpuFreeSince = Array.from({ length: host.gpus }, () => undefined);
  }

  /** Resolves once welcomed. */
  connect(): Promise<void> {
    return new Promise((resolve) => {
      this.onWelcome = resolve;
      this.open();
    });
  }

  private open(): void {
    const url = `${this.host.url.replace(/^http/, 'ws')}${AGENT_ROUTES.connect}`;
    const socket = new WebSocket(url, {
      headers: { authorization: `Bearer ${this.host.key}` },
      maxPayload: MAX_MESSAGE_BYTES,
      handshakeTimeout: 30_000,
    });
    this.socket = socket;
    socket.on('open', () =>
      this.send({
        type: 'hello',
        ...helloVersionFields(),
        agentVersion: AGENT_VERSION,
        ...(this.hostId && { hostId: this.hostId }),
        hardware: this.hardware,
        runningJobs: [...this.jobs].map(([jobId, job]) => ({
          jobId,
          attempt: job.attempt,
          gpuIndexes: job.gpuIndexes,
        })),
      }),
    );
    socket.on('message', (data: RawData, isBinary) => {
      if (!isBinary) this.receive(frameText(data));
    });
    socket.on('error', (error) => note(`host ${this.host.index}: ${error.message}`));
    socket.on('close', (code, reason) => {
      this.clearTimers();
      this.welcomed = false;
      if (stopping) return;
      reconnects++;
      note(`host ${this.host.index} disconnected: ${code} ${reason.toString()}`);
      this.after(RECONNECT_MS, () => this.open());
    });
  }

  private receive(text: string): void {
    const parsed = parseMessage(text, 'toAgent');
    if (!parsed.ok) return note(`host ${this.host.index}: invalid message: ${parsed.error}`);
    const message = parsed.message;
    switch (message.type) {
      case 'welcome':
        return this.welcome(message);
      case 'job.assign':
        return this.assign(message);
      case 'job.cancel':
        return this.finish(message.jobId, 'cancelled', message.reason);
      case 'error':
        return note(`host ${this.host.index}: the control plane said: ${message.message}`);
      default:
        return;
    }
  }

  private welcome(welcome: Extract<ServerMessage, { type: 'welcome' }>): void {
    const now = Date.now();
    this.welcomed = true;
    this.hostId = welcome.hostId;
    for (let index = 0; index < this.gpuFreeSince.length; index++)
      if (![...this.jobs.values()].some((job) => job.gpuIndexes.includes(index))) this.gpuFreeSince[index] ??= now;
    this.cpuFreeSince ??= now;
    const socket = this.socket!;
    // As the real agent: pings on their own timer, heartbeats (with the host's load) on the welcome's.
    this.every(Math.min(PING_MS, welcome.heartbeatSeconds * 1000), () => socket.ping());
    this.every(welcome.heartbeatSeconds * 1000, () => this.heartbeat());
    if (welcome.protocolVersion >= 2)
      this.send({
        type: 'capabilities',
        exporters: ['onnx', 'torchscript'],
        missingExporters: { engine: 'TensorRT is not installed' },
        ...(welcome.protocolVersion >= 3 && { services: [] }),
      });
    this.onWelcome?.();
    this.onWelcome = undefined;
  }

  private heartbeat(): void {
    const busy = new Set([...this.jobs.values()].flatMap((job) => job.gpuIndexes));
    this.send({
      type: 'heartbeat',
      at: new Date().toISOString(),
      load: {
        cpuPercent: busy.size > 0 ? 35 : 2,
        memoryUsedBytes: 64 * 2 ** 30,
        gpus: this.hardware.gpus.map((gpu) => ({
          index: gpu.index,
          utilizationPercent: busy.has(gpu.index) ? 97 : 0,
          memoryUsedMiB: busy.has(gpu.index) ? Math.round(gpu.memoryMiB * 0.8) : 0,
          temperatureC: busy.has(gpu.index) ? 74 : 38,
        })),
      },
    });
  }

  private assign(message: Extract<ServerMessage, { type: 'job.assign' }>): void {
    const at = Date.now();
    const { jobId, spec } = message;
    if (this.jobs.has(jobId)) return;
    const gpuIndexes = spec.gpus.indexes ?? [];
    const since = gpuIndexes.length ? gpuIndexes.map((index) => this.gpuFreeSince[index]) : [this.cpuFreeSince];
    if (since.some((value) => value === undefined))
      note(`host ${this.host.index}: job ${jobId} was assigned a GPU or CPU slot still busy here`);
    assignments.push({
      jobId,
      host: this.host.index,
      replica: this.host.replica,
      at,
      freeSince: Math.max(...since.map((value) => value ?? at)),
      gpus: gpuIndexes.length,
    });
    for (const index of gpuIndexes) this.gpuFreeSince[index] = undefined;
    if (gpuIndexes.length === 0) this.cpuFreeSince = undefined;
    const seconds = Number(spec.env.FLEET_SECONDS ?? '1');
    const startedAt = performance.now();
    const timer = setTimeout(() => this.finish(jobId, 'completed'), seconds * 1000);
    this.jobs.set(jobId, { attempt: message.attempt, timer, startedAt, gpuIndexes });
    this.send({ type: 'job.accepted', jobId });
    this.send({
      type: 'job.log',
      jobId,
      stream: 'stdout',
      lines: [
        `$ ${spec.command.join(' ')}`,
        `fleet simulation: running for ${seconds} s on GPUs [${gpuIndexes.join(',')}]`,
      ],
    });
  }

  private finish(jobId: string, outcome: 'completed' | 'cancelled', error?: string): void {
    const job = this.jobs.get(jobId);
    if (!job) {
      // Unknown here (as the real agent answers a cancel of a job it does not run).
      this.send({ type: 'job.finished', jobId, outcome: 'cancelled', ...(error && { error }) });
      return;
    }
    clearTimeout(job.timer);
    this.jobs.delete(jobId);
    const sent = this.send({
      type: 'job.finished',
      jobId,
      outcome,
      ...(outcome === 'completed' && { exitCode: 0 }),
      ...(error && { error }),
      ranSeconds: (performance.now() - job.startedAt) / 1000,
      endedSecondsAgo: 0,
    });
    if (!sent) note(`host ${this.host.index}: job ${jobId} ended while disconnected; its end was not reported`);
    const now = Date.now();
    for (const index of job.gpuIndexes) this.gpuFreeSince[index] = now;
    if (job.gpuIndexes.length === 0) this.cpuFreeSince = now;
  }

  private send(message: AgentMessage): boolean {
    const socket = this.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN || (!this.welcomed && message.type !== 'hello')) return false;
    socket.send(encodeMessage(message));
    return true;
  }

  stop(): Promise<void> {
    this.clearTimers();
    for (const job of this.jobs.values()) clearTimeout(job.timer);
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      socket.once('close', () => resolve());
      if (socket.readyState === WebSocket.OPEN) socket.close(1000, 'agent stopping');
      else socket.terminate();
      setTimeout(() => socket.terminate(), 3000).unref();
    });
  }

  private after(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  private every(ms: number, fn: () => void): void {
    this.timers.add(setInterval(fn, ms));
  }

  private clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

function frameText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  return (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString('utf8');
}

function reply(message: FleetReply): void {
  process.send!(message);
}

/** Opens the agents' sockets a few at a time, as hosts coming up do, and resolves once all are welcomed. */
async function connectAll(hosts: SimHost[]): Promise<void> {
  const started = performance.now();
  const pending = [...hosts];
  const opening = Array.from({ length: 8 }, async () => {
    for (let host = pending.shift(); host; host = pending.shift()) {
      const agent = new SimAgent(host);
      agents.push(agent);
      await agent.connect();
    }
  });
  await Promise.all(opening);
  reply({ type: 'connected', agents: agents.length, ms: performance.now() - started });
}

if (!process.send) {
  console.error('bench/fleet-agents.ts is started by bench/fleet.ts (it needs an IPC channel)');
  process.exit(2);
}
process.on('message', (command: FleetCommand) => {
  if (command.type === 'connect') void connectAll(command.hosts);
  else if (command.type === 'report') reply({ type: 'report', assignments, reconnects, errors });
  else if (command.type === 'stop') {
    stopping = true;
    void Promise.all(agents.map((agent) => agent.stop())).then(() => process.exit(0));
  }
});
// The bench going away (its IPC channel closed) ends this process too.
process.on('disconnect', () => process.exit(0));
