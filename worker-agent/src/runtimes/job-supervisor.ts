// Each process-runtime job's parent: `node job-supervisor.ts <state dir> <command> [args...]`, started by the agent
// as the leader of a new process group, in the job's work dir and with its environment. The job writes its output
// straight into files in the state dir, and when it ends its exit status is written there too, so neither depends
// on the agent: an agent that stops or dies meanwhile finds both when it starts again.
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { outputFile, STATE_FILES, type ExitStatus } from './process-job-state.ts';
import { writeJsonAtomically } from './shared.ts';

/** How long a full disk may keep the exit status from being written: 2 minutes. */
const EXIT_WRITE_TRIES = 120;
const EXIT_WRITE_RETRY_MS = 1000;

const [dir, command, ...args] = process.argv.slice(2) as [string, string, ...string[]];
const append = (stream: 'stdout' | 'stderr') => openSync(outputFile(dir, stream), 'a');
// The job stays in this process group, so a stop (SIGTERM to the group) reaches it and everything it starts.
const job = spawn(command, args, { stdio: ['ignore', append('stdout'), append('stderr')] });
// That SIGTERM is for the job; this process stays to record how the job ends. It is passed on as well: one that
// reached this process while it was still starting, before the job existed, would otherwise never reach the job.
process.on('SIGTERM', () => job.kill('SIGTERM'));

let spawnError: string | undefined;
job.on('error', (error) => (spawnError ??= error.message));
job.on('close', (code, signal) => {
  const status: ExitStatus =
    job.pid === undefined ? { error: spawnError ?? 'the job did not start' } : { code, signal };
  void recordExit(status).then(() => {
    // What the job left behind goes with it, this process last.
    process.kill(-process.pid, 'SIGKILL');
  });
});

/** Tried again while it cannot be written (a full disk may pass): without it the job's end is unknown. */
async function recordExit(status: ExitStatus): Promise<void> {
  for (let tried = 1; tried <= EXIT_WRITE_TRIES; tried++) {
    try {
      return writeJsonAtomically(join(dir, STATE_FILES.exit), status);
    } catch {
      await sleep(EXIT_WRITE_RETRY_MS);
    }
  }
}
