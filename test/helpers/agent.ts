// Real processes for end-to-end tests: `vp-worker` agents, and a control plane that a test can kill outright.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ProcessJobState } from '../../worker-agent/src/runtimes/process-job-state.ts';
import { eventually } from './host-jobs.ts';
import { call, type TestServer } from './server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Spawned {
  child: ChildProcess;
  /** Everything it wrote to stderr so far (the agent logs JSON lines there). */
  output(): string;
  exited: Promise<number | null>;
}

/** `command` with its output kept, killed when the test ends. */
export function spawnKept(
  t: Teardown,
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Spawned {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { child, output: () => output, exited };
}

/** A Node script of this checkout, on the test's Node, with the test's environment and `env` over it. */
function start(t: Teardown, args: string[], env: Record<string, string>): Spawned {
  return spawnKept(t, process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } });
}

/** `vp-worker enroll`; resolves once the config holds the key. */
export async function enrollAgent(t: Teardown, server: string, token: string, config: string): Promise<void> {
  const enroll = start(
    t,
    ['worker-agent/bin/vp-worker.js', 'enroll', '--server', server, '--token', token, '--config', config],
    {},
  );
  const code = await enroll.exited;
  if (code !== 0) throw new Error(`vp-worker enroll exited with ${code}: ${enroll.output()}`);
}

/**
 * `vp-worker run` with the given config file and VP_WORKER_* overrides. On the process runtime its jobs outlive it (the
 * next agent adopts them): those still running, a deployment's server for one, are killed when the test ends. The
 * tests' pool hosts are one operator's, so the process runtime is allowed there unless `env` says otherwise.
 */
export function runAgent(t: Teardown, config: string, env: Record<string, string>): Spawned {
  const workRoot = env.VP_WORKER_WORK_DIR;
  if (env.VP_WORKER_RUNTIME === 'process' && workRoot) {
    t.teardown(async () => {
      for (const { record } of await ProcessJobState.list(workRoot)) {
        try {
          process.kill(-record.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
  }
  return start(t, ['worker-agent/bin/vp-worker.js', 'run', '--config', config], {
    VP_WORKER_ALLOW_SHARED_PROCESS_RUNTIME: '1',
    ...env,
  });
}

/** A control plane as its own process (`node control-plane/src/main.ts`), ready once /api/health answers. */
export async function runControlPlane(t: Teardown, env: Record<string, string>): Promise<Spawned & { url: string }> {
  const spawned = start(t, ['control-plane/src/main.ts'], { HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env });
  const url = `http://127.0.0.1:${env.PORT}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (spawned.child.exitCode !== null) throw new Error(`the control plane exited: ${spawned.output()}`);
    try {
      if ((await fetch(`${url}/api/health`)).ok) return { ...spawned, url };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the control plane did not start: ${spawned.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * A pool host named `name` on the process runtime with the trainer environment `venv`, enrolled and running, once the
 * appliance counts it (a connected CPU host: gpu-availability's cpu is High). Its config and work dir go in `dir`.
 */
export async function startTrainerHost(
  t: Teardown,
  server: TestServer,
  options: { name: string; dir: string; venv: string },
): Promise<Spawned> {
  const config = join(options.dir, `${options.name}.json`);
  const { enrollmentToken } = await server.services().hosts.connect(options.name);
  await enrollAgent(t, server.url, enrollmentToken, config);
  const agent = runAgent(t, config, {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(options.dir, 'work'),
    VP_WORKER_PROCESS_VENV: options.venv,
  });
  await eventually(
    async () =>
      (await call<Record<string, string | null>>(server, 'GET', '/api/training/gpu-availability')).body.cpu === 'High',
    'the host to connect',
  );
  return agent;
}
