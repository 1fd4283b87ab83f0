// A real RTSP camera for the tests (rtsp-source.py: gst-rtsp-server through the system Python's python3-gi) serving a
// still picture as a live H.264 stream, and the processes a test watches (the ffmpeg a server runs).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Teardown } from './main-process.ts';

const SCRIPT = fileURLToPath(new URL('./rtsp-source.py', import.meta.url));
/** Debian's Python, which has python3-gi (a venv's or pyenv's does not). */
const SYSTEM_PYTHON = '/usr/bin/python3';
const START_TIMEOUT_MS = 15_000;

export interface RtspSource {
  /** rtsp://127.0.0.1:<port>/stream */
  url: string;
  pid: number;
}

/** Serves `picture` at `fps` frames a second until the test ends. */
export async function startRtspSource(t: Teardown, picture: string, fps = 10): Promise<RtspSource> {
  const child = spawn(SYSTEM_PYTHON, [SCRIPT, picture, '--fps', String(fps)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGCONT'); // a test may have paused it
    child.kill('SIGTERM');
    await exited;
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the RTSP source did not start within ${START_TIMEOUT_MS} ms: ${stderr}`)),
      START_TIMEOUT_MS,
    );
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
      const line = /^(rtsp:\/\/\S+)\n/.exec(stdout);
      if (!line) return;
      clearTimeout(timer);
      resolve(line[1]!);
    });
    child.once('error', reject);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the RTSP source exited: ${stderr}`));
    });
  });
  return { url, pid: child.pid! };
}

/** The live (not zombie) processes whose parent is `parent` and whose command name is `name`. */
export function childProcesses(parent: number, name: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      const stat = processStat(Number(pid));
      return stat?.name === name && stat.parent === parent && stat.state !== 'Z';
    })
    .map(Number);
}

/** Whether `pid` is a process that has not exited (a zombie has). */
export function isRunning(pid: number): boolean {
  const stat = processStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

function processStat(pid: number): { name: string; state: string; parent: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone
  }
  // pid (comm) state ppid …: comm may hold spaces and parentheses, so the last ')' ends it.
  const close = text.lastIndexOf(')');
  const [state, parent] = text.slice(close + 2).split(' ');
  return { name: text.slice(text.indexOf('(') + 1, close), state: state!, parent: Number(parent) };
}
