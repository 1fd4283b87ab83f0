// Files that travel with a job besides its output: inputs fetched before it starts, and a checkpoint it keeps
// rewriting that is uploaded while it runs, so a job moved to another host resumes instead of starting over.
import { createReadStream } from 'node:fs';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { AGENT_ROUTES, routePath, type JobSpec } from '@vp/protocol';
import { downloadTo } from './http-files.ts';
import type { Logger } from './log.ts';
import type { JobFiles } from './runtimes/runtime.ts';
import { prepareWorkDir } from './runtimes/shared.ts';

export interface JobFilesOptions {
  server: string;
  workerKey: string;
  workRoot: string;
  log: Logger;
  /** Told of each upload retried (the agent's metrics). */
  onRetry?: () => void;
}

/** Downloads the spec's inputs into the job's work dir (each path checked to stay inside it). */
export async function fetchInputs(options: JobFilesOptions, spec: JobSpec): Promise<void> {
  if (!spec.inputs?.length) return;
  const dir = await prepareWorkDir(options.workRoot, spec.workDir);
  for (const input of spec.inputs) {
    const target = resolve(dir, input.path);
    if (relative(dir, target).startsWith('..')) throw new Error(`input path ${input.path} leaves the work dir`);
    await mkdir(dirname(target), { recursive: true });
    await downloadTo(input.url, target).catch((error: unknown) => {
      throw new Error(`input ${input.path}: ${(error as Error).message}`);
    });
  }
}

/** The newest file named `name` under `dir` (a few levels deep, as a trainer's runs/<task>/<owner>/<project>/<name>/weights). */
async function newest(
  dir: string,
  name: string,
  depth = 8,
): Promise<{ path: string; mtimeMs: number; size: number } | undefined> {
  let best: { path: string; mtimeMs: number; size: number } | undefined;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    const found =
      entry.isDirectory() && depth > 0
        ? await newest(path, name, depth - 1)
        : entry.isFile() && entry.name === name
          ? await stat(path).then(({ mtimeMs, size }) => ({ path, mtimeMs, size }))
          : undefined;
    if (found && (!best || found.mtimeMs > best.mtimeMs))
      best = { path: found.path, mtimeMs: found.mtimeMs, size: found.size };
  }
  return best;
}

/**
 * Uploads the job's checkpoint whenever it changed, at most every `everySeconds`, to the control plane (worker-key
 * auth). Returns a function that stops watching. Failures are logged and retried at the next tick.
 */
export function watchCheckpoint(
  options: JobFilesOptions,
  job: { jobId: string; attempt: number; spec: JobFiles },
): () => void {
  const checkpoint = job.spec.checkpoint;
  if (!checkpoint) return () => {};
  const root = resolve(options.workRoot, job.spec.workDir, checkpoint.under);
  let uploadedMtime = 0;
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const file = await newest(root, checkpoint.file);
      if (!file || file.mtimeMs <= uploadedMtime) return;
      // Let a write in progress finish: a file still growing is taken at the next tick.
      await new Promise((settle) => setTimeout(settle, 500));
      const now = await stat(file.path);
      if (now.mtimeMs !== file.mtimeMs || now.size !== file.size) return;
      const response = await fetch(
        `${options.server}${routePath(AGENT_ROUTES.checkpoint, { jobId: job.jobId })}?attempt=${job.attempt}`,
        {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${options.workerKey}`,
            'content-type': 'application/octet-stream',
            'content-length': String(file.size),
          },
          body: Readable.toWeb(createReadStream(file.path)) as never,
          duplex: 'half',
        } as RequestInit,
      );
      if (!response.ok) throw new Error(`HTTP ${response.status} ${await response.text()}`);
      uploadedMtime = file.mtimeMs;
      options.log('info', 'checkpoint uploaded', { jobId: job.jobId, bytes: file.size });
    } catch (error) {
      options.log('warn', 'checkpoint upload failed', { jobId: job.jobId, error: (error as Error).message });
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), checkpoint.everySeconds * 1000);
  return () => clearInterval(timer);
}
