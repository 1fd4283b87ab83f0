// What `npm run bench:fleet` watches once a second while the fleet works: each replica's PostgreSQL connections (by
// application_name, which each replica's PGAPPNAME sets), resident memory and CPU time, its backends' CPU time, and
// the machine's CPU, all from pg_stat_activity and /proc.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { rssBytes } from './lib.ts';

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** user + system CPU time of a process (all its threads), in seconds; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may hold spaces: utime and stime are the 12th and 13th fields after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The machine's busy and total CPU time so far, in seconds (all cores). */
function machineCpu(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const ticks = fields.map(Number);
  const idle = ticks[3] + (ticks[4] ?? 0);
  const total = ticks.slice(0, 8).reduce((sum, value) => sum + value, 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

export interface ReplicaSample {
  connections: number;
  /** Of them, running a statement or inside a transaction now. */
  busyConnections: number;
  rssBytes: number;
}

export interface Sample {
  at: number;
  replicas: ReplicaSample[];
}

export interface ProcessCpu {
  /** CPU seconds over the window, per second of it: 1.0 is one core kept busy. */
  cores: number;
}

export interface SamplerSummary {
  samples: number;
  seconds: number;
  replicas: Array<{
    maxConnections: number;
    maxBusyConnections: number;
    maxRssBytes: number;
    /** The replica's own process. */
    cpuCores: number;
    /** The PostgreSQL backends of its connections. */
    backendCpuCores: number;
  }>;
  /** Each simulated agents' process. */
  agentCpuCores: number[];
  /** This process (queueing jobs, sampling) and its PostgreSQL backends. */
  benchCpuCores: number;
  /** Every process on the machine, out of its cores. */
  machineBusyCores: number;
  /** What the machine spent on anything but the above (other work on the same machine). */
  otherCpuCores: number;
}

/**
 * Samples every second from start() to stop(); `mark()` starts the window the CPU figures cover (the drain). The
 * replicas' PostgreSQL backends are found by application_name `${appPrefix}${index}`.
 */
export class FleetSampler {
  readonly samples: Sample[] = [];
  private readonly client: pg.Client;
  private readonly database: string;
  private readonly appPrefix: string;
  private readonly benchApp: string;
  private readonly replicaPids: number[];
  private readonly agentPids: number[];
  private timer: NodeJS.Timeout | undefined;
  private sampling: Promise<void> | undefined;
  /** CPU seconds of every watched process (and backend) when the window started, and when last seen. */
  private readonly firstCpu = new Map<number, number>();
  private readonly lastCpu = new Map<number, number>();
  /** Each backend's replica, from its application_name. */
  private readonly backendOf = new Map<number, number>();
  private window:
    | { at: number; machine: { busy: number; total: number }; own: NodeJS.CpuUsage; ownEnd?: NodeJS.CpuUsage }
    | undefined;

  constructor(
    adminUrl: string,
    options: { database: string; appPrefix: string; benchApp: string; replicaPids: number[]; agentPids: number[] },
  ) {
    this.client = new pg.Client({ connectionString: adminUrl, application_name: `${options.benchApp}-sampler` });
    this.database = options.database;
    this.appPrefix = options.appPrefix;
    this.benchApp = options.benchApp;
    this.replicaPids = options.replicaPids;
    this.agentPids = options.agentPids;
  }

  async start(): Promise<void> {
    await this.client.connect();
    await this.sample();
    this.timer = setInterval(() => {
      this.sampling ??= this.sample().finally(() => (this.sampling = undefined));
    }, 1000);
  }

  /** The CPU window starts now. */
  mark(): void {
    this.firstCpu.clear();
    this.lastCpu.clear();
    this.window = { at: performance.now(), machine: machineCpu(), own: process.cpuUsage() };
    this.readCpu();
  }

  async stop(): Promise<SamplerSummary> {
    clearInterval(this.timer);
    await this.sampling;
    await this.sample();
    await this.client.end();
    if (this.window) this.window.ownEnd = process.cpuUsage(this.window.own);
    return this.summary();
  }

  private readCpu(): void {
    const pids = [...this.replicaPids, ...this.agentPids, ...this.backendOf.keys()];
    for (const pid of pids) {
      const seconds = cpuSeconds(pid);
      if (seconds === undefined) continue;
      if (!this.firstCpu.has(pid)) this.firstCpu.set(pid, seconds);
      this.lastCpu.set(pid, seconds);
    }
  }

  private async sample(): Promise<void> {
    const { rows } = await this.client.query<{ pid: number; application_name: string; state: string | null }>(
      `select pid, application_name, state from pg_stat_activity
       where (datname = $1 and application_name like $2) or application_name like $3`,
      [this.database, `${this.appPrefix}%`, `${this.benchApp}%`],
    );
    const replicas: ReplicaSample[] = this.replicaPids.map((pid) => ({
      connections: 0,
      busyConnections: 0,
      rssBytes: safeRss(pid),
    }));
    for (const row of rows) {
      // The bench's own backends count as replica -1.
      const index = row.application_name.startsWith(this.appPrefix)
        ? Number(row.application_name.slice(this.appPrefix.length))
        : -1;
      if (index === -1) {
        if (!this.backendOf.has(row.pid)) {
          this.backendOf.set(row.pid, -1);
          if (this.window) this.firstCpu.set(row.pid, 0);
        }
        continue;
      }
      const replica = replicas[index];
      if (!replica) continue;
      replica.connections++;
      if (row.state !== 'idle') replica.busyConnections++;
      if (!this.backendOf.has(row.pid)) {
        this.backendOf.set(row.pid, index);
        // A backend that appeared inside the window counts from here (its CPU before this is near nothing).
        if (this.window) this.firstCpu.set(row.pid, 0);
      }
    }
    if (this.window) this.readCpu();
    this.samples.push({ at: Date.now(), replicas });
  }

  private summary(): SamplerSummary {
    const seconds = this.window ? (performance.now() - this.window.at) / 1000 : 0;
    const cores = (pid: number) =>
      seconds > 0 ? ((this.lastCpu.get(pid) ?? 0) - (this.firstCpu.get(pid) ?? 0)) / seconds : 0;
    const machine = machineCpu();
    const machineBusyCores =
      this.window && seconds > 0 ? (machine.busy - this.window.machine.busy) / seconds : Number.NaN;
    const own = this.window?.ownEnd;
    const backendCores = (replica: number) =>
      [...this.backendOf].filter(([, of]) => of === replica).reduce((sum, [backend]) => sum + cores(backend), 0);
    const benchCpuCores = (own && seconds > 0 ? (own.user + own.system) / 1e6 / seconds : 0) + backendCores(-1);
    const replicas = this.replicaPids.map((pid, index) => ({
      maxConnections: Math.max(0, ...this.samples.map((sample) => sample.replicas[index].connections)),
      maxBusyConnections: Math.max(0, ...this.samples.map((sample) => sample.replicas[index].busyConnections)),
      maxRssBytes: Math.max(0, ...this.samples.map((sample) => sample.replicas[index].rssBytes)),
      cpuCores: cores(pid),
      backendCpuCores: backendCores(index),
    }));
    const agentCpuCores = this.agentPids.map(cores);
    const ours =
      replicas.reduce((sum, replica) => sum + replica.cpuCores + replica.backendCpuCores, 0) +
      agentCpuCores.reduce((sum, value) => sum + value, 0) +
      benchCpuCores;
    return {
      samples: this.samples.length,
      seconds,
      replicas,
      agentCpuCores,
      benchCpuCores,
      machineBusyCores,
      otherCpuCores: Math.max(0, machineBusyCores - ours),
    };
  }
}

function safeRss(pid: number): number {
  try {
    return rssBytes(pid);
  } catch {
    return 0;
  }
}
