// Finished jobs' work dirs (a trainer's runs, downloaded inputs) are kept a while after the job's end was reported,
// to look into, then removed. Each one is noted under the agent's state dir with when its job ended; a sweep at the
// agent's start and every SWEEP_INTERVAL_MS removes those older than the keep time. Kept dirs never starve new jobs:
// before a job starts, while the work root's file system has less than MIN_FREE_SHARE free, the oldest go early. Only
// dirs noted here are ever removed, and never one a job still runs in (or under, or above).
import { mkdir, readdir, readFile, rm, rmdir, statfs } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { Logger } from './log.ts';
import { AGENT_STATE_DIR, isJobDir, writeJsonAtomically } from './runtimes/shared.ts';

export const SWEEP_INTERVAL_MS = 10 * 60 * 1000;
/** Below this share of its file system free, finished jobs' work dirs are removed before their keep time. */
export const MIN_FREE_SHARE = 0.2;

interface EndedNote {
  workDir: string;
  endedAt: number;
}

export interface WorkDirRetentionOptions {
  workRoot: string;
  /** How long a finished job's work dir is kept; 0 removes it as soon as the job's end is reported. */
  keepMs: number;
  log: Logger;
  /** The work dirs (relative to the work root) of the jobs the agent runs now. */
  inUse: () => Iterable<string>;
}

export class WorkDirRetention {
  readonly #options: WorkDirRetentionOptions;
  readonly #notes: string;

  constructor(options: WorkDirRetentionOptions) {
    this.#options = { ...options, workRoot: resolve(options.workRoot) };
    this.#notes = join(this.#options.workRoot, AGENT_STATE_DIR, 'ended-work-dirs');
  }

  /** A job's end was reported: its work dir's keep time starts now (again, if an earlier job used it too). */
  async ended(workDir: string, now = Date.now()): Promise<void> {
    await mkdir(this.#notes, { recursive: true });
    writeJsonAtomically(this.#note(workDir), { workDir, endedAt: now } satisfies EndedNote);
    if (this.#options.keepMs === 0) await this.sweep(now);
  }

  /** Removes the noted work dirs whose keep time is over and that no running job uses. */
  async sweep(now = Date.now()): Promise<void> {
    for (const ended of await this.#ended())
      if (ended.note === undefined || now - ended.note.endedAt >= this.#options.keepMs) await this.#remove(ended);
  }

  /**
   * Before a job starts: while the work root's file system has less than MIN_FREE_SHARE free, the finished jobs' work
   * dirs go, oldest first, whatever their keep time (a full disk would refuse the job).
   */
  async makeRoom(): Promise<void> {
    if (await this.#hasRoom()) return;
    const ended = (await this.#ended()).sort((a, b) => (a.note?.endedAt ?? 0) - (b.note?.endedAt ?? 0));
    for (const one of ended) if ((await this.#remove(one)) && (await this.#hasRoom())) return;
  }

  async #hasRoom(): Promise<boolean> {
    const { bavail, blocks } = await statfs(this.#options.workRoot);
    return blocks === 0 || bavail / blocks >= MIN_FREE_SHARE;
  }

  /** The noted work dirs, each with its note (undefined: unreadable, removed as if its keep time were over). */
  async #ended(): Promise<Array<{ file: string; note: EndedNote | undefined }>> {
    const names = await readdir(this.#notes).catch(() => []);
    // One at a time: thousands of notes read at once could run out of file descriptors, and an unreadable note is
    // removed as if its keep time were over.
    const ended: Array<{ file: string; note: EndedNote | undefined }> = [];
    for (const name of names) {
      const file = join(this.#notes, name);
      ended.push({
        file,
        note: (await readFile(file, 'utf8').then(JSON.parse, () => undefined)) as EndedNote | undefined,
      });
    }
    return ended;
  }

  /** Removes a noted work dir and its note, unless a running job uses it; whether it went. */
  async #remove({ file, note }: { file: string; note: EndedNote | undefined }): Promise<boolean> {
    const { workRoot, log } = this.#options;
    const dir = note && resolve(workRoot, note.workDir);
    const busy = [...this.#options.inUse()].map((used) => resolve(workRoot, used));
    if (dir && busy.some((other) => overlaps(dir, other))) return false;
    try {
      if (dir && isJobDir(workRoot, dir)) {
        await rm(dir, { recursive: true, force: true });
        await removeEmptyParents(workRoot, dir);
        log('info', "removed a finished job's work dir", { workDir: note.workDir });
      }
      await rm(file, { force: true });
      return true;
    } catch (error) {
      log('warn', "could not remove a finished job's work dir", {
        workDir: note?.workDir,
        error: (error as Error).message,
      });
      return false;
    }
  }

  /** Sweeps now and every SWEEP_INTERVAL_MS; returns a function that stops it. */
  start(): () => void {
    const sweep = () =>
      void this.sweep().catch((error: unknown) =>
        this.#options.log('warn', 'work dir sweep failed', { error: (error as Error).message }),
      );
    sweep();
    const timer = setInterval(sweep, SWEEP_INTERVAL_MS).unref();
    return () => clearInterval(timer);
  }

  #note(workDir: string): string {
    return join(this.#notes, `${encodeURIComponent(workDir)}.json`);
  }
}

/** One is the other, or inside it. */
function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(b + sep) || b.startsWith(a + sep);
}

/** A job's dir `training/<job>/<attempt>` leaves `training/<job>` behind; empty parents go too, up to the work root. */
async function removeEmptyParents(workRoot: string, dir: string): Promise<void> {
  for (
    let parent = dirname(dir);
    relative(workRoot, parent) !== '' && !relative(workRoot, parent).startsWith('..');
    parent = dirname(parent)
  ) {
    const removed = await rmdir(parent).then(
      () => true,
      () => false,
    );
    if (!removed) return;
  }
}
