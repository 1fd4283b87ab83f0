// One process-runtime job as the agent follows it, whether this agent started it or adopted it after a restart:
// its output is read from the files its supervisor points it at (from where the last agent left off), its end from
// the exit status the supervisor writes; it is stopped through its process group.
import { open } from 'node:fs/promises';
import { failureCause } from './failure-cause.ts';
import {
  isRunning,
  signal,
  type ExitStatus,
  type Offsets,
  type ProcessJobRecord,
  type ProcessJobState,
} from './process-job-state.ts';
import type { JobOutcome, LogBatcher, LogStream, RunningJob, StopOutcome } from './runtime.ts';
import { after } from './shared.ts';

/** How often the output files and the exit status are looked at; output goes out in batches this far apart. */
const POLL_MS = 1000;
/** A line this long without its newline yet is delivered in parts rather than held. */
const MAX_PENDING_LINE_BYTES = 64 * 1024;
const READ_BYTES = 1024 * 1024;

export interface ProcessJobOptions {
  state: ProcessJobState;
  record: ProcessJobRecord;
  logs: LogBatcher;
  stopGraceMs: number;
  /** The job's environment and work dir, to keep them out of a failure's cause. */
  cause: { env: Record<string, string>; workDirs: string[] };
  /** When this agent started it: resolves when the supervisor exits, so the end is seen at once. */
  supervisorExited?: Promise<void>;
}

export class ProcessJob implements RunningJob {
  readonly jobId: string;
  readonly servicePort: number | undefined;
  readonly #options: ProcessJobOptions;
  readonly #offsets: Offsets;
  readonly #done: Promise<JobOutcome>;
  /** Set when the agent ends the job; decides the outcome whatever the exit status. */
  #stopped: JobOutcome | undefined;
  #ended = false;
  #cancelTimeout: () => void = () => {};
  #killTimer: NodeJS.Timeout | undefined;
  #detached = false;
  /** Reused for every read: the log batcher decodes what it is given before the next read. */
  readonly #buffer = Buffer.allocUnsafe(READ_BYTES);
  /** Set when something happened that the follow loop should look at now rather than at its next poll. */
  #nudged = false;
  #nudge: () => void = () => (this.#nudged = true);

  constructor(options: ProcessJobOptions) {
    const { record, state } = options;
    this.jobId = record.jobId;
    this.servicePort = record.servicePort;
    this.#options = options;
    this.#offsets = state.delivered();
    if (record.timeoutSeconds !== undefined) {
      const deadline = record.startedAt + record.timeoutSeconds * 1000;
      this.#cancelTimeout = after(
        deadline - Date.now(),
        () => void this.#end({ outcome: 'failed', error: 'timed out' }),
      );
    }
    void options.supervisorExited?.then(() => this.#nudge());
    this.#done = this.#follow();
    // A stop an earlier agent began is carried through: the job gets its SIGTERM again, and SIGKILL after the grace.
    const stop = state.stop();
    if (stop) void this.#end(stop);
  }

  wait(): Promise<JobOutcome> {
    return this.#done;
  }

  async stop(reason: string, outcome: StopOutcome = 'cancelled'): Promise<void> {
    await this.#end({ outcome, error: reason });
  }

  /** The job's end was reported: its state (record, output, exit status) is no longer needed. */
  async release(): Promise<void> {
    await this.#options.state.remove();
  }

  /** Stops following the job and leaves it running, for an agent started later to adopt. */
  detach(): void {
    this.#detached = true;
    this.#cancelTimeout();
    clearTimeout(this.#killTimer);
    this.#nudge();
  }

  async #follow(): Promise<JobOutcome> {
    const { state, record } = this.#options;
    for (;;) {
      await this.#deliver(false);
      if (this.#detached) return new Promise<JobOutcome>(() => {});
      // Read before looking at the process, so a supervisor that wrote it and exited is not taken for one that died.
      const exit = state.exit();
      if (exit) return this.#finish(exit);
      if (!isRunning(record.pid, record.startTime)) return this.#finish(state.exit());
      await this.#pause();
    }
  }

  /** Until the next poll, or sooner when nudged. */
  async #pause(): Promise<void> {
    if (!this.#nudged) {
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, POLL_MS);
        this.#nudge = () => {
          clearTimeout(timer);
          wake();
        };
      });
    }
    this.#nudged = false;
    this.#nudge = () => (this.#nudged = true);
  }

  async #finish(exit: ExitStatus | undefined): Promise<JobOutcome> {
    this.#ended = true;
    this.#cancelTimeout();
    clearTimeout(this.#killTimer);
    await this.#deliver(true);
    this.#options.logs.end();
    const times = { startedAt: this.#options.record.startedAt, endedAt: this.#options.state.exitedAt() ?? Date.now() };
    return { ...(this.#stopped ?? this.#outcome(exit)), ...times };
  }

  #outcome(exit: ExitStatus | undefined): JobOutcome {
    if (exit === undefined)
      return { outcome: 'failed', error: 'the process that watched the job ended without recording how the job ended' };
    if ('error' in exit) return { outcome: 'failed', error: exit.error };
    if (exit.code === 0) return { outcome: 'completed' };
    const cause = failureCause(this.#options.logs.tail, this.#options.cause);
    const why = exit.code === null ? `killed by ${exit.signal}` : `exited with status ${exit.code}`;
    return {
      outcome: 'failed',
      ...(exit.code !== null && { exitCode: exit.code }),
      error: cause === undefined ? why : `${why}: ${cause}`,
    };
  }

  /**
   * Hands the output written since the last call to the log sink, whole lines only until the job has ended, and
   * records how far that went, so an agent restarted later goes on from there.
   */
  async #deliver(final: boolean): Promise<void> {
    let moved = false;
    for (const stream of ['stdout', 'stderr'] as const) moved = (await this.#read(stream, final)) || moved;
    // Detached meanwhile: what was read is left for the next agent, which reads it again from the recorded offset.
    if (!moved || this.#detached) return;
    this.#options.logs.flush();
    this.#options.state.writeDelivered(this.#offsets);
  }

  async #read(stream: LogStream, final: boolean): Promise<boolean> {
    const file = await open(this.#options.state.output(stream)).catch(() => undefined);
    if (!file) return false;
    const start = this.#offsets[stream];
    try {
      for (;;) {
        const { bytesRead } = await file.read(this.#buffer, 0, READ_BYTES, this.#offsets[stream]);
        if (bytesRead === 0) break;
        const chunk = this.#buffer.subarray(0, bytesRead);
        const lines = chunk.lastIndexOf(0x0a) + 1;
        const end = final || (lines === 0 && bytesRead > MAX_PENDING_LINE_BYTES) ? bytesRead : lines;
        if (end === 0) break;
        this.#options.logs.write(stream, chunk.subarray(0, end));
        this.#offsets[stream] += end;
        if (end < bytesRead) break;
      }
    } finally {
      await file.close();
    }
    return this.#offsets[stream] !== start;
  }

  /** SIGTERM to the whole group, SIGKILL after the grace period; the first stop's outcome stands. */
  async #end(outcome: JobOutcome): Promise<void> {
    if (!this.#ended && this.#stopped === undefined) {
      this.#stopped = outcome;
      this.#options.state.writeStop(outcome);
      this.#signalGroup('SIGTERM');
      this.#killTimer = setTimeout(() => this.#signalGroup('SIGKILL'), this.#options.stopGraceMs);
    }
    await this.#done;
  }

  /** Only while the supervisor runs: once it is gone, its pid (the group's id) may be another's. */
  #signalGroup(name: NodeJS.Signals): void {
    const { pid, startTime } = this.#options.record;
    if (isRunning(pid, startTime)) signal(-pid, name);
  }
}
