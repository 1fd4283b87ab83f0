// A deployment's inference server (inference-server/src/main.ts) started as its own process, as an agent runs it, and
// requests to it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SERVER_ENV } from '../../inference-server/src/contract.ts';
import { freePort } from './agent.ts';
import type { Teardown } from './main-process.ts';

const MAIN = fileURLToPath(new URL('../../inference-server/src/main.ts', import.meta.url));
export const SERVICE_TOKEN = 'service-token-for-the-tests-0123456789';

export interface RunningServer {
  url: string;
  pid: number;
  output(): string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
}

/** Starts the server on `onnx` and waits until its health check answers 200. */
export async function startInferenceServer(
  t: Teardown,
  onnx: string,
  env: Record<string, string> = {},
): Promise<RunningServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      [SERVER_ENV.model]: onnx,
      [SERVER_ENV.port]: String(port),
      [SERVER_ENV.token]: SERVICE_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await fetch(`${url}/health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return { url, pid: child.pid!, output: () => output, exited };
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`the inference server did not become healthy:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** POST /predict with a multipart file (or `fields` alone) and the test token unless told otherwise. */
export async function predictAt(
  url: string,
  image: Uint8Array | undefined,
  fields: Record<string, string> = {},
  token: string | null = SERVICE_TOKEN,
) {
  const form = new FormData();
  if (image) form.set('file', new Blob([image], { type: 'image/png' }), 'picture.png');
  for (const [name, value] of Object.entries(fields)) form.set(name, value);
  const response = await fetch(`${url}/predict`, {
    method: 'POST',
    body: form,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  return {
    status: response.status,
    body: (await response.json()) as {
      error?: string;
      images?: Array<{ results: unknown[] }>;
      metadata?: Record<string, unknown>;
    },
  };
}
