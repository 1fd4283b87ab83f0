// The process runtime's notes of the jobs it started, one file each under `<workRoot>/.vp-jobs/`: a child's pipes
// die with the agent, so after a restart these notes are all that says which process groups are still a job's.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AGENT_STATE_DIR } from './shared.ts';

export interface ProcessRecord {
  jobId: string;
  attempt: number;
  /** The job's process, which leads its own process group. */
  pid: number;
  /** The kernel's start time of that process (Linux), to tell it from a later process given the same pid. */
  startTime?: string;
}

export class ProcessRecords {
  readonly #dir: string;

  constructor(workRoot: string) {
    this.#dir = join(workRoot, AGENT_STATE_DIR);
  }

  /** Synchronous, so it is on disk before the job can end and forget() it. */
  write(record: ProcessRecord): void {
    mkdirSync(this.#dir, { recursive: true });
    writeFileSync(this.#file(record.jobId), JSON.stringify(record));
  }

  async forget(jobId: string): Promise<void> {
    await rm(this.#file(jobId), { force: true });
  }

  /** Every record left; an unreadable one (the agent died while writing it) is dropped, as nothing can be done with it. */
  async list(): Promise<ProcessRecord[]> {
    const names = await readdir(this.#dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
    const records: ProcessRecord[] = [];
    for (const name of names.filter((n) => n.endsWith('.json'))) {
      const file = join(this.#dir, name);
      try {
        records.push(JSON.parse(await readFile(file, 'utf8')) as ProcessRecord);
      } catch {
        await rm(file, { force: true });
      }
    }
    return records;
  }

  #file(jobId: string): string {
    return join(this.#dir, `${jobId}.json`);
  }
}

/** Field 22 of /proc/<pid>/stat, read after the command name (which may hold spaces and parentheses); undefined when gone or not Linux. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
