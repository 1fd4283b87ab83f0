// The real entry point (`npm start` runs `node control-plane/src/main.ts`) as a child process: for tests of
// the first start, and for tests that watch the control plane's own process (its memory).
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const URL_LINE = /^Vision Platform API: (http:\/\/\S+)\/api\b/m;

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Started {
  child: ChildProcess;
  url: string;
  /** Milliseconds from spawn to the printed URL. */
  startMs: number;
  /** Everything the process wrote on stdout and stderr so far. */
  output(): string;
  /** SIGTERM and the exit code (null when it died of a signal). */
  stop(): Promise<number | null>;
}

/** Starts main.ts with exactly `env` (plus PATH/HOME) and waits for the line with the base URL; stopped with the test. */
export async function startMain(t: Teardown, env: Record<string, string>, timeoutMs = 30_000): Promise<Started> {
  const started = Date.now();
  // With npm start's flag (README, Memory).
  const child = spawn(process.execPath, ['--max-semi-space-size=4', 'control-plane/src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  });

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no base URL after ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const check = () => {
      const match = URL_LINE.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', check);
    // `exited` never rejects: it resolves with the exit code.
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
  return { child, url, startMs: Date.now() - started, output: () => output, stop };
}

/** Whether something accepts connections on 127.0.0.1:`port` (an embedded PostgreSQL still running, say). */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
