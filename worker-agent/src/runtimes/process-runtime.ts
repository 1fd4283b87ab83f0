// Runs a job as a plain child process on the host: no image, no isolation. memoryBytes, cpus and shmBytes are
// ignored here; only the Docker runtime can enforce them. GPUs are chosen with CUDA_VISIBLE_DEVICES.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LogBatcher, type JobAssignment, type JobOutcome, type JobRuntime, type LogSink, type RecoveredJob, type RunningJob } from './runtime.ts';
import { processStartTime, ProcessRecords } from './process-records.ts';
import { after, endedJob, prepareWorkDir } from './shared.ts';

export interface ProcessRuntimeOptions {
  /** Absolute; each job runs in `<workRoot>/<spec.workDir>`. */
  workRoot: string;
  /** The jobs' base environment. Default: the agent's own, less its VP_WORKER_* settings (the worker key). */
  environment?: Record<string, string>;
  /** How long stop() waits after SIGTERM before SIGKILL. */
  stopGraceMs?: number;
}

export class ProcessRuntime implements JobRuntime {
  readonly #workRoot: string;
  readonly #environment: Record<string, string>;
  readonly #stopGraceMs: number;
  readonly #records: ProcessRecords;

  constructor(options: ProcessRuntimeOptions) {
    this.#workRoot = resolve(options.workRoot);
    this.#environment = options.environment ?? agentEnvironment();
    this.#stopGraceMs = options.stopGraceMs ?? 10_000;
    this.#records = new ProcessRecords(this.#workRoot);
  }

  async start({ jobId, attempt, spec }: JobAssignment, sink: LogSink): Promise<RunningJob> {
    const cwd = await prepareWorkDir(this.#workRoot, spec.workDir);
    const env = { ...this.#environment, ...spec.env };
    // Without indexes the job keeps whatever the configured environment says.
    if (spec.gpus.count === 0) env.CUDA_VISIBLE_DEVICES = '';
    else if (spec.gpus.indexes) env.CUDA_VISIBLE_DEVICES = spec.gpus.indexes.join(',');
    const [command, ...args] = spec.command as [string, ...string[]];
    // detached: the job leads its own process group, so stopping it reaches everything it started.
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const pid = child.pid;
    if (pid !== undefined) this.#records.write({ jobId, attempt, pid, startTime: processStartTime(pid) });
    const forget = () => this.#records.forget(jobId);
    return new ProcessJob(jobId, child, new LogBatcher(sink), this.#stopGraceMs, spec.timeoutSeconds, forget);
  }

  /**
   * An earlier agent's children cannot be re-attached (their pipes closed with it), so each job it left running is
   * stopped and reported failed. Best effort against a recorded pid given to another process since: a live process
   * at that pid with another start time is left alone; when the job's leader is gone, signalling its group reaches
   * only what is left of the job, as Linux gives no new process a pid still in use as a process group id. Without
   * /proc (not Linux) the pid is trusted.
   */
  async recover(): Promise<RecoveredJob[]> {
    const records = await this.#records.list();
    return Promise.all(
      records.map(async ({ jobId, attempt, pid, startTime }) => {
        const now = processStartTime(pid);
        const reused = now !== undefined && startTime !== undefined && now !== startTime;
        const stopped = !reused && (await stopGroup(pid, this.#stopGraceMs));
        await this.#records.forget(jobId);
        const error = `the agent restarted while the job ran; ${stopped ? 'its process was stopped' : 'its outcome is unknown'}`;
        return { jobId, attempt, job: endedJob(jobId, { outcome: 'failed', error }) };
      }),
    );
  }
}

/** The agent's own environment less its VP_WORKER_* settings (the worker key): what a job may see of it. */
export function agentEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('VP_WORKER_')),
  );
}

/** Signals a whole process group; false when no process is left in it. */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** SIGTERM, then SIGKILL if the group outlives the grace period; false when nothing was left to stop. */
async function stopGroup(pid: number, graceMs: number): Promise<boolean> {
  if (!signalGroup(pid, 'SIGTERM')) return false;
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && signalGroup(pid, 0)) await sleep(50);
  signalGroup(pid, 'SIGKILL');
  return true;
}

class ProcessJob implements RunningJob {
  readonly jobId: string;
  readonly #child: ChildProcess;
  readonly #stopGraceMs: number;
  readonly #done: Promise<JobOutcome>;
  /** Set when the agent ends the job; decides the outcome whatever the exit status. */
  #stopped: JobOutcome | undefined;
  #exited = false;
  #cancelTimeout: () => void = () => {};
  #killTimer: NodeJS.Timeout | undefined;

  constructor(
    jobId: string,
    child: ChildProcess,
    logs: LogBatcher,
    stopGraceMs: number,
    timeoutSeconds: number | undefined,
    /** Drops the job's record once it has ended, before wait() resolves. */
    forget: () => Promise<void>,
  ) {
    this.jobId = jobId;
    this.#child = child;
    this.#stopGraceMs = stopGraceMs;
    child.stdout?.on('data', (chunk: Buffer) => logs.write('stdout', chunk));
    child.stderr?.on('data', (chunk: Buffer) => logs.write('stderr', chunk));
    if (timeoutSeconds !== undefined) {
      this.#cancelTimeout = after(timeoutSeconds * 1000, () => void this.#end({ outcome: 'failed', error: 'timed out' }));
    }
    this.#done = new Promise((resolveOutcome) => {
      const finish = (outcome: JobOutcome) => {
        this.#exited = true;
        this.#cancelTimeout();
        clearTimeout(this.#killTimer);
        logs.end();
        // A record left behind is harmless: recover() finds its process gone or its pid taken by another.
        void forget()
          .catch(() => {})
          .then(() => resolveOutcome(this.#stopped ?? outcome));
      };
      let spawnError: Error | undefined;
      child.on('error', (error) => (spawnError ??= error));
      // What the job left behind goes with it; that also closes any pipe a straggler held open.
      child.once('exit', () => {
        this.#exited = true;
        this.#signalGroup('SIGKILL');
      });
      child.once('close', (code, signal) => {
        // A spawn failure (command not found) never had a process; 'close' still follows its 'error'.
        if (child.pid === undefined) finish({ outcome: 'failed', error: spawnError?.message ?? 'the job did not start' });
        else if (code === 0) finish({ outcome: 'completed' });
        else if (code !== null) finish({ outcome: 'failed', exitCode: code, error: `exited with status ${code}` });
        else finish({ outcome: 'failed', error: `killed by ${signal}` });
      });
    });
  }

  wait(): Promise<JobOutcome> {
    return this.#done;
  }

  async stop(reason: string): Promise<void> {
    await this.#end({ outcome: 'cancelled', error: reason });
  }

  /** SIGTERM to the whole group, SIGKILL after the grace period; the first stop's outcome stands. */
  async #end(outcome: JobOutcome): Promise<void> {
    if (!this.#exited && this.#stopped === undefined) {
      this.#stopped = outcome;
      this.#signalGroup('SIGTERM');
      this.#killTimer = setTimeout(() => this.#signalGroup('SIGKILL'), this.#stopGraceMs);
    }
    await this.#done;
  }

  #signalGroup(signal: NodeJS.Signals): void {
    if (this.#child.pid !== undefined) signalGroup(this.#child.pid, signal);
  }
}
