// What a job leaves behind for the control plane (JobSpec.outputs, an exported model): uploaded after it exited 0
// and before it is reported completed. A file goes as it is; a directory as one zip archive of its contents, written
// to a temporary file first: the control plane stores an upload of an announced length (all or nothing, refused up
// front when over its cap), and a retry must send the same bytes again without zipping twice.
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir, realpath, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import yazl from 'yazl';
import { AGENT_ROUTES, routePath } from '@vp/protocol';
import type { JobFilesOptions } from './job-files.ts';
import type { JobFiles } from './runtimes/runtime.ts';
import { AGENT_STATE_DIR } from './runtimes/shared.ts';
import { uploadFrom } from './http-files.ts';

/** Tries per output; a transient failure (no answer, 5xx, 429) waits 1, 2, 4 s before the next. */
export const UPLOAD_TRIES = 4;
const RETRY_BASE_MS = 1000;

/**
 * A 404 says the control plane does not see the job on this host now: the host was taken for lost while its connection
 * was down, and its reconnect takes the job back (or cancels it, which aborts the upload). Tried again every
 * UNCLAIMED_RETRY_MS for UNCLAIMED_FOR_MS, so a finished job is not failed for a connection that is coming back.
 */
const UNCLAIMED_RETRY_MS = 2000;
const UNCLAIMED_FOR_MS = 60_000;

/** Why the outputs could not be delivered: the job fails with this message. */
export class OutputError extends Error {}

/** A failure worth trying again (the control plane restarting, a dropped connection). */
class TransientUploadError extends Error {}

/** The job is not this host's running job now (404). */
class UnclaimedJobError extends Error {}

export interface OutputUpload {
  jobId: string;
  attempt: number;
  files: JobFiles;
  /** A line for the job's own log, so its users see the uploads. */
  say: (line: string) => void;
  signal: AbortSignal;
}

/** Uploads every output in order; throws OutputError naming the first that is missing or could not be uploaded. */
export async function uploadOutputs(options: JobFilesOptions, job: OutputUpload): Promise<void> {
  const workDir = await realpath(resolve(options.workRoot, job.files.workDir));
  for (const output of job.files.outputs ?? []) {
    const source = await outputSource(workDir, output.path);
    const zip = source.isDirectory
      ? join(options.workRoot, AGENT_STATE_DIR, 'outputs', `${encodeURIComponent(job.jobId)}-${output.name}`)
      : undefined;
    try {
      if (zip) await zipDirectory(source.path, zip);
      const file = zip ?? source.path;
      const { size } = await stat(file);
      job.say(`uploading ${output.name} (${formatBytes(size)})`);
      await upload(options, job, output.name, file, size).catch((error: unknown) => {
        throw error instanceof OutputError || job.signal.aborted
          ? error
          : new OutputError(`uploading ${output.name} failed: ${(error as Error).message}`);
      });
      job.say(`uploaded ${output.name}`);
    } finally {
      if (zip) await rm(zip, { force: true });
    }
  }
}

/** The output's real path, which must be a regular file or a directory inside the work dir (a symlink out of it is refused). */
async function outputSource(workDir: string, path: string): Promise<{ path: string; isDirectory: boolean }> {
  const real = await realpath(resolve(workDir, path)).catch(() => undefined);
  if (real === undefined) throw new OutputError(`the job produced no ${path}`);
  if (real !== workDir && !real.startsWith(workDir + sep))
    throw new OutputError(`output ${path} leads outside the job's work dir`);
  const info = await stat(real);
  if (!info.isFile() && !info.isDirectory()) throw new OutputError(`output ${path} is neither a file nor a directory`);
  return { path: real, isDirectory: info.isDirectory() };
}

/**
 * Streams the directory's regular files (symlinks are left out: they could point anywhere on the host) into a zip file,
 * under the directory's own name (`best_openvino_model/…`): unzipped, it is the folder `YOLO()` loads as it is.
 */
async function zipDirectory(dir: string, target: string): Promise<void> {
  await mkdir(dirname(target), { recursive: true });
  const zip = new yazl.ZipFile();
  const written = pipeline(zip.outputStream, createWriteStream(target));
  const top = basename(dir);
  zip.addEmptyDirectory(top);
  const add = async (path: string): Promise<void> => {
    for (const entry of await readdir(path, { withFileTypes: true })) {
      const full = join(path, entry.name);
      const name = [top, ...relative(dir, full).split(sep)].join('/');
      if (entry.isDirectory()) {
        zip.addEmptyDirectory(name);
        await add(full);
      } else if (entry.isFile()) {
        const info = await lstat(full);
        zip.addReadStream(createReadStream(full), name, { mtime: info.mtime, mode: info.mode, size: info.size });
      }
    }
  };
  try {
    await add(dir);
  } finally {
    zip.end();
  }
  await written;
}

async function upload(
  options: JobFilesOptions,
  job: OutputUpload,
  name: string,
  file: string,
  size: number,
): Promise<void> {
  const url = `${options.server}${routePath(AGENT_ROUTES.output, { jobId: job.jobId, name })}?attempt=${job.attempt}`;
  const started = Date.now();
  let failures = 0;
  for (;;) {
    try {
      return await put(url, options.workerKey, file, size, job.signal);
    } catch (error) {
      if (job.signal.aborted) throw error;
      if (error instanceof UnclaimedJobError && Date.now() - started < UNCLAIMED_FOR_MS) {
        options.log('warn', 'the control plane does not see the job on this host yet; retrying the upload', {
          jobId: job.jobId,
          name,
          error: error.message,
        });
        // A cancel ends the wait at once (the next try then stops on the aborted signal).
        await delay(UNCLAIMED_RETRY_MS, undefined, { signal: job.signal }).catch(() => undefined);
        continue;
      }
      if (!(error instanceof TransientUploadError) || ++failures >= UPLOAD_TRIES) throw error;
      options.log('warn', 'an output upload failed; retrying', { jobId: job.jobId, name, error: error.message });
      options.onRetry?.();
      // As above: a cancel ends the wait, and the next try stops on the aborted signal.
      await delay(RETRY_BASE_MS * 2 ** (failures - 1), undefined, { signal: job.signal }).catch(() => undefined);
    }
  }
}

async function put(url: string, workerKey: string, file: string, size: number, signal: AbortSignal): Promise<void> {
  let answer: { status: number; body: string };
  try {
    answer = await uploadFrom(
      url,
      file,
      {
        authorization: `Bearer ${workerKey}`,
        'content-type': 'application/octet-stream',
        'content-length': String(size),
      },
      signal,
    );
  } catch (error) {
    if (signal.aborted) throw error;
    throw new TransientUploadError((error as Error).message);
  }
  const { status, body } = answer;
  if (status >= 200 && status < 300) return;
  const reason = (() => {
    try {
      return (JSON.parse(body) as { error?: string }).error ?? body;
    } catch {
      return body;
    }
  })();
  const message = `HTTP ${status}${reason ? `: ${reason.slice(0, 500)}` : ''}`;
  if (status === 404) throw new UnclaimedJobError(message);
  throw status >= 500 || status === 429 ? new TransientUploadError(message) : new Error(message);
}

/** 12.3 MB, 512 B: for the job's log. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
