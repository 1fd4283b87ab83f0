// What the Docker and process runtimes both need: the job's work dir under the work root, long timers, and a job
// that has already ended (what recover() reports when there is nothing left to watch).
import { renameSync, writeFileSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { createServer } from 'node:net';
import { isAbsolute, relative, resolve } from 'node:path';
import type { JobSpec } from '@vp/protocol';
import { INFERENCE_SERVER } from '@vp/inference-server/contract';
import type { JobOutcome, RunningJob } from './runtime.ts';

/** Under the work root, the agent's own bookkeeping; no job's work dir may be in it. */
export const AGENT_STATE_DIR = '.vp-jobs';

/**
 * Creates `<workRoot>/<workDir>` and returns its real path, refusing one that resolves (through `..` or a symlink)
 * outside the work root, the work root itself, or the agent's state dir.
 */
export async function prepareWorkDir(workRoot: string, workDir: string): Promise<string> {
  const dir = resolve(workRoot, workDir);
  if (!isJobDir(workRoot, dir)) throw new Error(`work dir ${workDir} is outside the work root`);
  await mkdir(dir, { recursive: true });
  const [root, real] = await Promise.all([realpath(workRoot), realpath(dir)]);
  if (!isJobDir(root, real)) throw new Error(`work dir ${workDir} is outside the work root`);
  return real;
}

/** Inside the work root, not the root itself, not in the agent's state dir. */
export function isJobDir(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && rel.split('/')[0] !== AGENT_STATE_DIR;
}

/** setTimeout caps delays at about 24.8 days; a job's timeout may be 30. Returns a cancel function. */
export function after(ms: number, run: () => void): () => void {
  const MAX_DELAY = 2 ** 31 - 1;
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(() => (left > MAX_DELAY ? arm(left - MAX_DELAY) : run()), Math.min(left, MAX_DELAY));
  };
  arm(Math.max(0, ms));
  return () => clearTimeout(timer);
}

/** A job that ended before anyone could watch it: wait() gives its outcome, stop() and detach() have nothing to do, release() removes what is left. */
export function endedJob(
  jobId: string,
  outcome: JobOutcome,
  release: () => Promise<void> = () => Promise.resolve(),
): RunningJob {
  return { jobId, wait: () => Promise.resolve(outcome), stop: () => Promise.resolve(), release, detach: () => {} };
}

/** Through a temporary file and a rename, so a reader never sees half of it. Synchronous: on disk when it returns. */
export function writeJsonAtomically(file: string, value: unknown): void {
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify(value));
  renameSync(temporary, file);
}

/** An inference job's command is the server's: its name, then its arguments (returned); anything else cannot start. */
export function serviceCommand(spec: JobSpec): string[] {
  const [name, ...args] = spec.command;
  if (name !== INFERENCE_SERVER)
    throw new Error(`an inference job runs ${INFERENCE_SERVER}, not ${JSON.stringify(name)}`);
  return args;
}

/** A TCP port no one listens on now, as the kernel picks it. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, fail) => {
    const server = createServer();
    server.once('error', fail).listen(0, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}
