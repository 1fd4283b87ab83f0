// Runs a job as a plain child process on the host: no image, no isolation. memoryBytes, cpus and shmBytes are
// ignored here; only the Docker runtime can enforce them. GPUs are chosen with CUDA_VISIBLE_DEVICES.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type { JobSpec } from '@vp/protocol';
import { LogBatcher, type JobOutcome, type JobRuntime, type LogSink, type RunningJob } from './runtime.ts';

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

  constructor(options: ProcessRuntimeOptions) {
    this.#workRoot = resolve(options.workRoot);
    this.#environment = options.environment ?? agentEnvironment();
    this.#stopGraceMs = options.stopGraceMs ?? 10_000;
  }

  async start(job: { jobId: string; spec: JobSpec }, sink: LogSink): Promise<RunningJob> {
    const cwd = await this.#prepareWorkDir(job.spec.workDir);
    const env = { ...this.#environment, ...job.spec.env };
    // Without indexes the job keeps whatever the configured environment says.
    if (job.spec.gpus.count === 0) env.CUDA_VISIBLE_DEVICES = '';
    else if (job.spec.gpus.indexes) env.CUDA_VISIBLE_DEVICES = job.spec.gpus.indexes.join(',');
    const [command, ...args] = job.spec.command as [string, ...string[]];
    // detached: the job leads its own process group, so stopping it reaches everything it started.
    const child = spawn(command, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    return new ProcessJob(job.jobId, child, new LogBatcher(sink), this.#stopGraceMs, job.spec.timeoutSeconds);
  }

  /** Creates the job's directory, refusing one that resolves (through `..` or a symlink) outside the work root. */
  async #prepareWorkDir(workDir: string): Promise<string> {
    const dir = resolve(this.#workRoot, workDir);
    if (!isInside(this.#workRoot, dir)) throw new Error(`work dir ${workDir} is outside the work root`);
    await mkdir(dir, { recursive: true });
    const [root, real] = await Promise.all([realpath(this.#workRoot), realpath(dir)]);
    if (!isInside(root, real)) throw new Error(`work dir ${workDir} is outside the work root`);
    return real;
  }
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

function agentEnvironment(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && !entry[0].startsWith('VP_WORKER_')),
  );
}

/** setTimeout caps delays at about 24.8 days; a job's timeout may be 30. Returns a cancel function. */
function after(ms: number, run: () => void): () => void {
  const MAX_DELAY = 2 ** 31 - 1;
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(() => (left > MAX_DELAY ? arm(left - MAX_DELAY) : run()), Math.min(left, MAX_DELAY));
  };
  arm(ms);
  return () => clearTimeout(timer);
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

  constructor(jobId: string, child: ChildProcess, logs: LogBatcher, stopGraceMs: number, timeoutSeconds: number | undefined) {
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
        resolveOutcome(this.#stopped ?? outcome);
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
    if (this.#child.pid === undefined) return;
    try {
      process.kill(-this.#child.pid, signal);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }
}
