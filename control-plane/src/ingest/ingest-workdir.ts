import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { runningAttempts } from '../jobs/job.store.ts';

/** `vp-ingest-<job id>-<attempt>-<random>`: the attempt that owns a folder can be told from the job's row. */
const WORK_DIR = /^vp-ingest-([0-9a-f]{24})-(\d+)-[A-Za-z0-9]{6}$/;

/** A fresh folder under `root` for one attempt of an ingest (its download and extracted archive). */
export function makeWorkDir(root: string, jobId: string, attempt: number): Promise<string> {
  return mkdtemp(join(root, `vp-ingest-${jobId}-${attempt}-`));
}

/**
 * Deletes the folders of the job's attempts other than `keep` (all of them without it), left behind where this
 * process runs: a later attempt takes over from one whose process died, or the job ends without an attempt running.
 */
export async function removeJobWorkDirs(root: string, jobId: string, keep?: number): Promise<void> {
  for (const name of await readdir(root)) {
    const match = WORK_DIR.exec(name);
    if (match?.[1] === jobId && Number(match[2]) !== keep) await rm(join(root, name), { recursive: true, force: true });
  }
}

/**
 * Deletes the work folders that attempts left behind when their process died (kill -9 during an extraction).
 * A folder is abandoned when its job, in this database, is no longer running that attempt: it ended, or a later
 * attempt took it over (the one that lost the lease stops at its next renewal). Folders of running attempts,
 * whichever replica runs them, and of jobs this database does not know (another appliance sharing the temp
 * folder) are left alone. Returns how many were deleted.
 */
export async function sweepWorkDirs(em: EntityManager, root: string): Promise<number> {
  const found = (await readdir(root)).flatMap((name) => {
    const match = WORK_DIR.exec(name);
    return match ? [{ name, jobId: match[1], attempt: Number(match[2]) }] : [];
  });
  if (found.length === 0) return 0;
  const jobs = await runningAttempts(em, [...new Set(found.map((dir) => dir.jobId))]);
  const runningAttempt = new Map(jobs.map((job) => [job.id, job.running_attempt]));
  const abandoned = found.filter(
    (dir) => runningAttempt.has(dir.jobId) && runningAttempt.get(dir.jobId) !== dir.attempt,
  );
  for (const dir of abandoned) await rm(join(root, dir.name), { recursive: true, force: true });
  return abandoned.length;
}
