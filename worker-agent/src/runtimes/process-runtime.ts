// Runs a job as a plain child process on the host, as the agent's user: no image, and no isolation the operating
// system enforces (README: the process runtime). What it does keep apart: a job's environment is built from an
// allowlist (never the agent's settings or its worker key), and its home, temporary files, caches and ultralytics'
// settings are its own, in its work dir (job-home.ts). memoryBytes, cpus and shmBytes are ignored here; only the Docker
// runtime can enforce them. An inference job (a deployment's server) runs on the agent's
// own Node; a service job gets a free port of the host in PORT. GPUs are chosen with CUDA_VISIBLE_DEVICES. Each job runs
// under a small supervisor (job-supervisor.ts) that sends its output to files and records its exit status, so the
// job outlives the agent: an agent stopped (or killed) mid-job adopts it again when it starts, like Docker's.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { JobSpec } from '@vp/protocol';
import { jobHomeEnvironment } from './job-home.ts';
import { PROBE_COMMAND, PROBE_MAX_OUTPUT_BYTES, PROBE_TIMEOUT_MS } from '../exporter-probe.ts';
import { ProcessJob } from './process-job.ts';
import { ProcessJobState, processStartTime, type ProcessJobRecord } from './process-job-state.ts';
import {
  LogBatcher,
  jobFiles,
  type JobAssignment,
  type JobRuntime,
  type LogSink,
  type RecoveredJob,
  type RunningJob,
  type ServiceKind,
} from './runtime.ts';
import { freePort, prepareWorkDir, serviceCommand } from './shared.ts';

const SUPERVISOR = fileURLToPath(new URL('./job-supervisor.ts', import.meta.url));
/** The inference server this agent ships (@vp/inference-server), run on the agent's own Node. */
const INFERENCE_SERVER_MAIN = fileURLToPath(import.meta.resolve('@vp/inference-server'));

export interface ProcessRuntimeOptions {
  /** Absolute; each job runs in `<workRoot>/<spec.workDir>`. */
  workRoot: string;
  /** The jobs' base environment. Default: the allowed part of the agent's own (agentEnvironment()). */
  environment?: Record<string, string>;
  /** The trainer's Python environment: each job gets a copy of its ultralytics settings (job-home.ts). */
  venv?: string;
  /** How long stop() waits after SIGTERM before SIGKILL. */
  stopGraceMs?: number;
}

export class ProcessRuntime implements JobRuntime {
  readonly #workRoot: string;
  readonly #environment: Record<string, string>;
  readonly #venv: string | undefined;
  readonly #stopGraceMs: number;

  constructor(options: ProcessRuntimeOptions) {
    this.#workRoot = resolve(options.workRoot);
    this.#environment = options.environment ?? agentEnvironment();
    this.#venv = options.venv;
    this.#stopGraceMs = options.stopGraceMs ?? 10_000;
  }

  async start({ jobId, attempt, spec }: JobAssignment, sink: LogSink): Promise<RunningJob> {
    const cwd = await prepareWorkDir(this.#workRoot, spec.workDir);
    const env = { ...this.#environment, ...jobHomeEnvironment(cwd, this.#venv), ...spec.env };
    // Without indexes the job keeps whatever the configured environment says.
    if (spec.gpus.count === 0) env.CUDA_VISIBLE_DEVICES = '';
    else if (spec.gpus.indexes) env.CUDA_VISIBLE_DEVICES = spec.gpus.indexes.join(',');
    const servicePort = spec.service && (await freePort());
    if (servicePort) env.PORT = String(servicePort);
    const state = await ProcessJobState.create(this.#workRoot, jobId);
    // detached: the supervisor leads a process group of its own, the job's, so stopping it reaches everything the
    // job started; and nothing of the agent's (its terminal's Ctrl-C) reaches the job.
    const supervisor = spawn(process.execPath, [SUPERVISOR, state.dir, ...command(spec)], {
      cwd,
      env,
      detached: true,
      stdio: 'ignore',
    });
    const pid = supervisor.pid;
    if (pid === undefined) {
      const error = await new Promise<Error>((fail) => supervisor.once('error', fail));
      await state.remove();
      throw error;
    }
    // The agent does not wait for it to exit before it may exit itself (SIGTERM: the job goes on).
    supervisor.unref();
    const supervisorExited = new Promise<void>((exited) => supervisor.once('exit', () => exited()));
    const record: ProcessJobRecord = {
      jobId,
      attempt,
      pid,
      startTime: processStartTime(pid),
      startedAt: Date.now(),
      files: jobFiles(spec),
    };
    if (spec.timeoutSeconds !== undefined) record.timeoutSeconds = spec.timeoutSeconds;
    if (servicePort) record.servicePort = servicePort;
    state.writeRecord(record);
    return new ProcessJob({
      state,
      record,
      logs: new LogBatcher(sink),
      stopGraceMs: this.#stopGraceMs,
      cause: { env, workDirs: [resolve(this.#workRoot, spec.workDir), cwd] },
      supervisorExited,
    });
  }

  /**
   * The jobs an earlier agent process started and did not report the end of. Running ones are adopted: their output
   * goes on from where the earlier agent left it, their timeout counts from their start, a stop it began is carried
   * through. Ended ones are reported with the exit status their supervisor recorded and the output not yet sent.
   */
  async recover(sinkFor: (jobId: string) => LogSink): Promise<RecoveredJob[]> {
    return (await ProcessJobState.list(this.#workRoot)).map(({ state, record }) => {
      const { jobId, attempt, pid, files } = record;
      const cause = { env: jobEnvironment(pid), workDirs: [resolve(this.#workRoot, files.workDir)] };
      const job = new ProcessJob({
        state,
        record,
        logs: new LogBatcher(sinkFor(jobId)),
        stopGraceMs: this.#stopGraceMs,
        cause,
      });
      return { jobId, attempt, job, files };
    });
  }

  /** The inference server ships with the agent: it can always run it. */
  async services(): Promise<ServiceKind[]> {
    return ['inference'];
  }

  /** The probe found on the jobs' PATH: the configured environment's bin/ first. */
  async runExporterProbe(): Promise<string> {
    const { stdout } = await promisify(execFile)(PROBE_COMMAND, [], {
      env: this.#environment,
      timeout: PROBE_TIMEOUT_MS,
      killSignal: 'SIGKILL',
      maxBuffer: PROBE_MAX_OUTPUT_BYTES,
    });
    return stdout;
  }
}

/** What the supervisor runs: an inference job's server arguments after the agent's Node and the server it ships. */
function command(spec: JobSpec): string[] {
  if (spec.environment !== 'inference') return spec.command;
  return [process.execPath, INFERENCE_SERVER_MAIN, ...serviceCommand(spec)];
}

/**
 * What a job may see of the agent's environment: where programs and libraries are, the locale and time zone, how
 * CUDA and the thread pools are set up. Nothing else (the worker key, other settings, proxies, a shell's secrets):
 * a job may run a workspace's code.
 */
const INHERITED = new Set([
  'PATH',
  'LANG',
  'LANGUAGE',
  'TZ',
  'TERM',
  'USER',
  'LOGNAME',
  'LD_LIBRARY_PATH',
  'CUDA_HOME',
  'CUDA_PATH',
  'CUDA_DEVICE_ORDER',
  'OMP_NUM_THREADS',
  'MKL_NUM_THREADS',
]);
const inherited = (name: string) => INHERITED.has(name) || name.startsWith('LC_');

/** The allowed part of the agent's own environment (INHERITED). */
export function agentEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined && inherited(entry[0])),
  );
}

/** A running supervisor's environment (the job's), which is not kept on disk as it holds the job's keys; empty once it has ended. */
function jobEnvironment(pid: number): Record<string, string> {
  try {
    const pairs = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((pair) => pair.includes('='));
    return Object.fromEntries(
      pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    );
  } catch {
    return {};
  }
}
