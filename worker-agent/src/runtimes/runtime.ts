// The job runtime interface the agent drives, whatever runs the job (a Docker container or a plain process),
// and the log batcher every runtime feeds its output through.
import { StringDecoder } from 'node:string_decoder';
import {
  MAX_LOG_LINE_BYTES,
  MAX_LOG_LINES_PER_MESSAGE,
  MAX_MESSAGE_BYTES,
  type JobSpec,
  type SERVICE_KINDS,
} from '@vp/protocol';

export type LogStream = 'stdout' | 'stderr';
export type LogSink = (batch: { stream: LogStream; lines: string[] }) => void;

export interface JobOutcome {
  outcome: 'completed' | 'failed' | 'cancelled';
  exitCode?: number;
  /** Why it failed; after a non-zero exit, with the last error line of its output (failure-cause.ts). */
  error?: string;
  /** When its process started and ended (epoch ms, this host's clock), when the runtime recorded them: even across an agent restart. */
  startedAt?: number;
  endedAt?: number;
}

export interface RunningJob {
  readonly jobId: string;
  /** Resolves once the job has ended and its last log lines have reached the sink. */
  wait(): Promise<JobOutcome>;
  /** A service job's port on this host (JobSpec.service), where its health check and the control plane reach it. */
  readonly servicePort?: number;
  /** Ends the job (outcome 'cancelled' unless told 'failed'); resolves when it has ended. Does nothing once it has. */
  stop(reason: string, outcome?: StopOutcome): Promise<void>;
  /** Its end has been reported: what the runtime kept so a restarted agent could still report it can go. */
  release(): Promise<void>;
  /**
   * The agent is stopping and leaves the job running for the next agent to adopt: stop following it (and sending
   * its output), so nothing is read that could not be delivered, and hold nothing that keeps the agent's process up.
   */
  detach(): void;
}

export type StopOutcome = 'cancelled' | 'failed';

/** What the agent hands a runtime: the job's id, which attempt the server assigned, and its spec. */
export interface JobAssignment {
  jobId: string;
  attempt: number;
  spec: JobSpec;
}

/** A job a previous agent process left behind, found again by recover(). */
export interface RecoveredJob {
  jobId: string;
  attempt: number;
  /** Still running and re-attached (its logs from now on go to the sink), or already ended (wait() resolves at once). */
  job: RunningJob;
  /** Its work dir (and checkpoint, so uploads go on after the restart), when the runtime recorded them. */
  files?: JobFiles;
}

/** The part of a job's spec its checkpoint and output uploads need, and a service's health check. */
export type JobFiles = Pick<JobSpec, 'workDir' | 'checkpoint' | 'outputs' | 'service'>;

/** The JobFiles of a spec, as a runtime records them for a restarted agent. */
export const jobFiles = (spec: JobSpec): JobFiles => ({
  workDir: spec.workDir,
  checkpoint: spec.checkpoint,
  outputs: spec.outputs,
  service: spec.service,
});

export type ServiceKind = (typeof SERVICE_KINDS)[number];

export interface JobRuntime {
  start(assignment: JobAssignment, sink: LogSink): Promise<RunningJob>;
  /**
   * Called once when the agent starts, before it connects: the jobs an earlier agent process started and did not
   * report the end of. Both runtimes re-attach to running ones (Docker through its containers, the process runtime
   * through each job's supervisor, its output files and its recorded exit status), so a job never runs twice and its
   * outcome is never lost. Ended ones are reported with their real outcome (and, for the process runtime, the
   * output not yet sent).
   */
  recover(sink: (jobId: string) => LogSink): Promise<RecoveredJob[]>;
  /**
   * Runs the trainer environment's exporter probe (exporter-probe.ts) where its jobs would run (the trainer image, or
   * the configured Python environment) and resolves with what it printed; rejects when it fails, runs past
   * PROBE_TIMEOUT_MS or prints more than PROBE_MAX_OUTPUT_BYTES.
   */
  runExporterProbe(): Promise<string>;
  /** The services (JobSpec.environment) this runtime can run now, for `capabilities.services`. */
  services(): Promise<ServiceKind[]>;
}

const FLUSH_INTERVAL_MS = 1000;
/** Output lines kept to tell why a job failed (failure-cause.ts). */
export const TAIL_LINES = 200;
/** Room left in a job.log message for its envelope (type, jobId, stream). */
const BATCH_BYTES = MAX_MESSAGE_BYTES - 4096;
const TRUNCATED = '…[truncated]';

/** Cuts a line to the protocol's per-line limit, on a character boundary, marking that it was cut. */
export function truncateLine(line: string): string {
  if (Buffer.byteLength(line) <= MAX_LOG_LINE_BYTES) return line;
  const room = MAX_LOG_LINE_BYTES - Buffer.byteLength(TRUNCATED);
  let cut = line.slice(0, room);
  while (Buffer.byteLength(cut) > room) cut = cut.slice(0, -1);
  return cut + TRUNCATED;
}

interface StreamState {
  decoder: StringDecoder;
  /** The line not yet ended by a newline, kept no longer than needed to know it must be truncated. */
  partial: string;
  lines: string[];
  bytes: number;
}

/**
 * Splits output chunks into lines and hands them to the sink in batches: every second, or sooner when a batch
 * reaches the protocol's line count or message size. Writing never waits on the sink, so the job is never slowed.
 */
export class LogBatcher {
  readonly #sink: LogSink;
  readonly #streams: Record<LogStream, StreamState> = { stdout: LogBatcher.#state(), stderr: LogBatcher.#state() };
  #timer: NodeJS.Timeout | undefined;
  /** The last TAIL_LINES lines of both streams, in the order they came. */
  readonly #tail: string[] = [];

  constructor(sink: LogSink) {
    this.#sink = sink;
  }

  static #state(): StreamState {
    return { decoder: new StringDecoder('utf8'), partial: '', lines: [], bytes: 0 };
  }

  write(stream: LogStream, chunk: Buffer): void {
    const state = this.#streams[stream];
    const parts = state.decoder.write(chunk).split('\n');
    const last = parts.pop() as string;
    for (const part of parts) {
      this.#add(stream, state.partial + part);
      state.partial = '';
    }
    state.partial = (state.partial + last).slice(0, MAX_LOG_LINE_BYTES + 1);
  }

  get tail(): readonly string[] {
    return this.#tail;
  }

  /** Delivers the complete lines held now, without waiting for the timer. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#flushAll();
  }

  /** Delivers everything still held, a last line without a newline included; the batcher is done after. */
  end(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      const state = this.#streams[stream];
      const rest = state.partial + state.decoder.end();
      state.partial = '';
      if (rest !== '') this.#add(stream, rest);
      this.#flush(stream);
    }
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #add(stream: LogStream, raw: string): void {
    const line = truncateLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw);
    const bytes = Buffer.byteLength(JSON.stringify(line)) + 1;
    const state = this.#streams[stream];
    this.#tail.push(line);
    if (this.#tail.length > TAIL_LINES) this.#tail.shift();
    if (state.bytes + bytes > BATCH_BYTES) this.#flush(stream);
    state.lines.push(line);
    state.bytes += bytes;
    if (state.lines.length >= MAX_LOG_LINES_PER_MESSAGE) this.#flush(stream);
    else this.#timer ??= setTimeout(() => this.#flushAll(), FLUSH_INTERVAL_MS);
  }

  #flushAll(): void {
    this.#timer = undefined;
    this.#flush('stdout');
    this.#flush('stderr');
  }

  #flush(stream: LogStream): void {
    const state = this.#streams[stream];
    if (state.lines.length === 0) return;
    const lines = state.lines;
    state.lines = [];
    state.bytes = 0;
    this.#sink({ stream, lines });
  }
}
