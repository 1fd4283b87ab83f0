// The process runtime's state of each job it started, in `<workRoot>/.vp-jobs/process/<jobId>/`: the record (which
// process group is the job's, and what the job was), the job's output files, the exit status its supervisor writes,
// how much of the output was delivered, and the stop the agent asked for. A restarted agent follows the job on
// from these alone; they are removed once the job's end has been reported.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobFiles, JobOutcome, LogStream } from './runtime.ts';
import { AGENT_STATE_DIR, writeJsonAtomically } from './shared.ts';

export interface ProcessJobRecord {
  jobId: string;
  attempt: number;
  /** The job's supervisor, which leads the job's process group. */
  pid: number;
  /** The kernel's start time of that process (Linux), to tell it from a later process given the same pid. */
  startTime?: string;
  /** Epoch ms; a timeout counts from here, across restarts. */
  startedAt: number;
  timeoutSeconds?: number;
  /** A service job's port on this host (its PORT). */
  servicePort?: number;
  files: JobFiles;
}

/** What the supervisor writes when the job has ended: its exit code or signal, or why it could not start. */
export type ExitStatus = { code: number | null; signal: string | null } | { error: string };

/** Per stream, the bytes of its output file already handed to the agent's log sink. */
export type Offsets = Record<LogStream, number>;

export const STATE_FILES = {
  record: 'job.json',
  exit: 'exit.json',
  delivered: 'delivered.json',
  stop: 'stop.json',
} as const;

/** Where a stream of the job's output goes, in its state dir. */
export function outputFile(dir: string, stream: LogStream): string {
  return join(dir, `${stream}.log`);
}

export class ProcessJobState {
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
  }

  static root(workRoot: string): string {
    return join(workRoot, AGENT_STATE_DIR, 'process');
  }

  /** An empty state dir for a job starting now (whatever an earlier start of the same job left is dropped). */
  static async create(workRoot: string, jobId: string): Promise<ProcessJobState> {
    const dir = join(ProcessJobState.root(workRoot), encodeURIComponent(jobId));
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    return new ProcessJobState(dir);
  }

  /** The jobs an earlier agent left, with their records; a dir without a readable record (the agent died starting the job) is removed. */
  static async list(workRoot: string): Promise<Array<{ state: ProcessJobState; record: ProcessJobRecord }>> {
    const root = ProcessJobState.root(workRoot);
    const names = await readdir(root).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    const found = [];
    for (const name of names) {
      const state = new ProcessJobState(join(root, name));
      const record = state.#read<ProcessJobRecord>(STATE_FILES.record);
      if (record) found.push({ state, record });
      else await state.remove();
    }
    return found;
  }

  output(stream: LogStream): string {
    return outputFile(this.dir, stream);
  }

  /** Synchronous, so it is on disk before the job can end. */
  writeRecord(record: ProcessJobRecord): void {
    writeJsonAtomically(join(this.dir, STATE_FILES.record), record);
  }

  exit(): ExitStatus | undefined {
    return this.#read(STATE_FILES.exit);
  }

  /** When the supervisor recorded the exit (epoch ms), even one an agent that was not running missed. */
  exitedAt(): number | undefined {
    return statSync(join(this.dir, STATE_FILES.exit), { throwIfNoEntry: false })?.mtimeMs;
  }

  delivered(): Offsets {
    return this.#read<Offsets>(STATE_FILES.delivered) ?? { stdout: 0, stderr: 0 };
  }

  /**
   * Best effort: where it cannot be written (a full disk), the job goes on and a restarted agent sends the lines since
   * the last record again, rather than the job being lost over its bookkeeping.
   */
  writeDelivered(offsets: Offsets): void {
    bestEffort(() => writeJsonAtomically(join(this.dir, STATE_FILES.delivered), offsets));
  }

  /** The agent's stop (cancel or timeout), so an agent restarted before the job ended still reports it as such. */
  stop(): JobOutcome | undefined {
    return this.#read(STATE_FILES.stop);
  }

  /** Best effort, as writeDelivered: a stop that cannot be recorded is still carried out by this agent. */
  writeStop(outcome: JobOutcome): void {
    bestEffort(() => writeJsonAtomically(join(this.dir, STATE_FILES.stop), outcome));
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  #read<T>(name: string): T | undefined {
    try {
      return JSON.parse(readFileSync(join(this.dir, name), 'utf8')) as T;
    } catch {
      return undefined;
    }
  }
}

/** Fields 3 (state) and 22 (start time) of /proc/<pid>/stat, read after the command name (which may hold spaces and parentheses). */
function stat(pid: number): { state: string; startTime: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] as string, startTime: fields[19] as string };
  } catch {
    return undefined;
  }
}

/** The kernel's start time of a process (Linux), to tell it later from another given the same pid. */
export function processStartTime(pid: number): string | undefined {
  return stat(pid)?.startTime;
}

/** Whether the process recorded as `pid` started at `startTime` still runs; a zombie has ended. Without /proc (not Linux) the pid is trusted. */
export function isRunning(pid: number, startTime: string | undefined): boolean {
  if (!existsSync('/proc/self/stat')) return signal(pid, 0);
  const now = stat(pid);
  return now !== undefined && now.state !== 'Z' && (startTime === undefined || now.startTime === startTime);
}

/** Signals a process (a positive pid) or a process group (negative); false when there is none. */
export function signal(pid: number, name: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

function bestEffort(write: () => void): void {
  try {
    write();
  } catch {
    // left as it was: the next write tries again
  }
}
