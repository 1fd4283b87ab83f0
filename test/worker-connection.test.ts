// The agent's side of the worker socket against a stand-in control plane (a `ws` server in this file), so it
// is tested without the real server: hello and heartbeats, reconnecting with backoff, ignoring bad frames,
// stopping cleanly, and a refused key ending `vp-worker run` with its own exit status.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { WebSocketServer, type WebSocket } from 'ws';
import { CLOSE, Hardware, PROTOCOL_VERSION } from '@vp/protocol';
import type { WorkerConfig } from '../worker-agent/src/config.ts';
import {
  DEAD_AFTER_PINGS,
  WorkerConnection,
  backoffDelay,
  connectUrl,
  DEFAULT_TIMING,
  type ConnectionTiming,
  type Welcome,
} from '../worker-agent/src/connection.ts';
import type { Capabilities } from '../worker-agent/src/exporter-probe.ts';
import type { Logger } from '../worker-agent/src/log.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const KEY = 'vpw_test_key';

type Fixtures = Pick<typeof t, 'teardown' | 'testdir'>;

interface Received {
  socket: number;
  at: number;
  message: Record<string, unknown>;
}

/** A stand-in control plane: checks the key, answers hello with welcome, records every frame it receives. */
async function fakeControlPlane(
  t: Fixtures,
  options: {
    heartbeatSeconds?: number;
    welcome?: boolean;
    protocolVersion?: number;
    refuse?: (attempt: number) => number | undefined;
    autoPong?: boolean;
  } = {},
) {
  let attempts = 0;
  const attemptTimes: number[] = [];
  const sockets: WebSocket[] = [];
  const received: Received[] = [];
  const closes: { code: number }[] = [];
  const server = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    path: '/api/workers/connect',
    autoPong: options.autoPong ?? true,
    verifyClient: (info, callback) => {
      const attempt = attempts++;
      attemptTimes.push(Date.now());
      const status =
        options.refuse?.(attempt) ?? (info.req.headers.authorization === `Bearer ${KEY}` ? undefined : 401);
      callback(status === undefined, status);
    },
  });
  server.on('connection', (socket) => {
    const index = sockets.push(socket) - 1;
    socket.on('close', (code) => closes.push({ code }));
    socket.on('message', (data) => {
      const message = JSON.parse((data as Buffer).toString('utf8')) as Record<string, unknown>;
      received.push({ socket: index, at: Date.now(), message });
      if (message.type === 'hello' && options.welcome !== false) {
        const protocolVersion = options.protocolVersion ?? PROTOCOL_VERSION;
        socket.send(
          JSON.stringify({
            type: 'welcome',
            protocolVersion,
            hostId: 'h-1',
            heartbeatSeconds: options.heartbeatSeconds ?? 30,
          }),
        );
      }
    });
  });
  await once(server, 'listening');
  t.teardown(() => {
    for (const client of server.clients) client.terminate();
    server.close();
  });
  const of = (type: string) => received.filter((entry) => entry.message.type === type);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sockets,
    closes,
    received,
    of,
    attempts: () => attempts,
    /** Milliseconds between consecutive upgrade attempts. */
    gaps: () => attemptTimes.slice(1).map((time, i) => time - attemptTimes[i]),
    /** Resolves once `check` holds; tap's timeout catches a wait that never ends. */
    until: (check: () => boolean) =>
      new Promise<void>((resolve) => {
        const poll = () => (check() ? resolve() : setTimeout(poll, 10));
        poll();
      }),
  };
}

const configFor = (server: string, dir: string, workerKey = KEY): WorkerConfig => ({
  server,
  workerKey,
  workDir: dir,
  runtime: 'process',
  trainerImage: undefined,
  inferenceImage: 'vp-inference:latest',
  serviceHost: undefined,
  maxConcurrentJobs: undefined,
  processVenv: undefined,
  hostId: undefined,
  hostName: undefined,
  keepWorkDirsHours: 24,
  sharedFolders: [],
  allowSharedProcessRuntime: false,
  metricsListen: undefined,
  configFile: join(dir, 'config.json'),
});

/** A connection whose log is kept for assertions; stopped at teardown. */
function connect(t: Fixtures, server: string, timing: Partial<ConnectionTiming> = {}, capabilities?: Capabilities) {
  const logs: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log: Logger = (level, msg, fields) => logs.push({ level, msg, fields });
  const connection = new WorkerConnection(configFor(server, t.testdir()), log, timing);
  if (capabilities) connection.setCapabilities(capabilities);
  const done = connection.run();
  t.teardown(() => connection.stop());
  return { connection, done, logs };
}

t.test('backoff: full jitter under a doubling bound that stops at the cap', async (t) => {
  const timing = { ...DEFAULT_TIMING, backoffBaseMs: 1000, backoffCapMs: 30_000 };
  t.same(
    [0, 1, 2, 4, 5, 10].map((attempt) => backoffDelay(attempt, timing, () => 0.999_999)),
    [999, 1999, 3999, 15_999, 29_999, 29_999],
  );
  t.equal(
    backoffDelay(3, timing, () => 0),
    0,
    'full jitter may retry at once',
  );
  t.equal(connectUrl('https://vision.example.com/base'), 'wss://vision.example.com/base/api/workers/connect');
  t.equal(connectUrl('http://10.0.0.5:3000'), 'ws://10.0.0.5:3000/api/workers/connect');
});

t.test(
  'hello carries the protocol version and valid hardware; heartbeats follow at the server’s interval',
  async (t) => {
    const server = await fakeControlPlane(t, { heartbeatSeconds: 1 });
    const { connection } = connect(t, server.url);
    const [welcome] = (await once(connection, 'welcome')) as [Welcome];
    t.match(welcome, { hostId: 'h-1', heartbeatSeconds: 1 });
    t.equal(connection.state, 'ready');

    const [hello] = server.of('hello');
    t.match(hello.message, {
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      agentVersion: '0.1.0',
      runningJobs: [],
    });
    t.notOk('hostId' in hello.message, 'a first connection names no host id');
    t.ok(Hardware.safeParse(hello.message.hardware).success, 'hardware passes the protocol schema');

    await server.until(() => server.of('heartbeat').length >= 3);
    const heartbeats = server.of('heartbeat');
    const times = [hello.at, ...heartbeats.map((entry) => entry.at)];
    for (let i = 1; i < times.length; i++)
      t.ok(
        Math.abs(times[i] - times[i - 1] - 1000) < 300,
        `heartbeat ${i} about 1 s after the previous (${times[i] - times[i - 1]} ms)`,
      );
    t.ok(
      heartbeats.every((entry) => !Number.isNaN(Date.parse(entry.message.at as string))),
      'each heartbeat carries its time',
    );
  },
);

t.test(
  'capabilities: sent after each welcome of protocol 2 once the probe answered, a later answer at once; never to a control plane speaking 1',
  async (t) => {
    const capabilities: Capabilities = {
      exporters: ['onnx'],
      missingExporters: { engine: 'TensorRT is not installed' },
    };
    const server = await fakeControlPlane(t);
    const { connection } = connect(t, server.url, { backoffBaseMs: 50, backoffCapMs: 200 });
    await once(connection, 'welcome');
    await new Promise((resolve) => setTimeout(resolve, 100));
    t.equal(server.of('capabilities').length, 0, 'not before the probe answered');
    connection.setCapabilities(capabilities);
    await server.until(() => server.of('capabilities').length === 1);
    t.same(server.of('capabilities')[0].message, { type: 'capabilities', ...capabilities });
    server.sockets[0].terminate();
    await once(connection, 'welcome');
    await server.until(() => server.of('capabilities').length === 2);
    t.equal(server.of('capabilities')[1].socket, 1, 'again on the new socket, from the same probe');
    const retried: Capabilities = { exporters: ['onnx', 'openvino'], missingExporters: {} };
    connection.setCapabilities(retried);
    await server.until(() => server.of('capabilities').length === 3);
    const [, , later] = server.of('capabilities');
    t.same([later.socket, later.message], [1, { type: 'capabilities', ...retried }], 'a later answer, at once');

    const old = await fakeControlPlane(t, { protocolVersion: 1, heartbeatSeconds: 1 });
    const { connection: toOld } = connect(t, old.url, {}, capabilities);
    const [welcome] = (await once(toOld, 'welcome')) as [Welcome];
    t.equal(welcome.protocolVersion, 1);
    await old.until(() => old.of('heartbeat').length >= 1);
    t.same(
      old.received.map((entry) => entry.message.type),
      ['hello', 'heartbeat'],
      'a version-1 control plane gets no capabilities, and the agent works on',
    );
  },
);

t.test(
  "a job's run times (protocol 6) and a start that never happened (protocol 8) go to a control plane that speaks them, and are left out for an older one",
  async (t) => {
    const finished = {
      type: 'job.finished',
      jobId: 'j-1',
      outcome: 'failed',
      exitCode: 1,
      ranSeconds: 12.5,
      endedSecondsAgo: 3,
      notStarted: true,
    } as const;
    const { notStarted: _notStarted, ...withoutNotStarted } = finished;
    for (const [protocolVersion, expected] of [
      [PROTOCOL_VERSION, finished],
      [7, withoutNotStarted],
      [5, { type: 'job.finished', jobId: 'j-1', outcome: 'failed', exitCode: 1 }],
    ] as const) {
      const server = await fakeControlPlane(t, { protocolVersion });
      const { connection } = connect(t, server.url);
      await once(connection, 'welcome');
      t.ok(connection.send(finished));
      await server.until(() => server.of('job.finished').length === 1);
      t.same(server.of('job.finished')[0]!.message, expected, `to a control plane of protocol ${protocolVersion}`);
    }
  },
);

t.test('a dropped socket is reconnected, and the new hello names the host from the last welcome', async (t) => {
  const server = await fakeControlPlane(t);
  const { connection } = connect(t, server.url, { backoffBaseMs: 50, backoffCapMs: 200 });
  await once(connection, 'welcome');
  server.sockets[0].terminate();
  await once(connection, 'welcome');
  const hellos = server.of('hello');
  t.equal(hellos.length, 2);
  t.equal(hellos[1].socket, 1, 'on a new socket');
  t.equal(hellos[1].message.hostId, 'h-1');
});

t.test(
  'a control plane that went silent without closing (a cable pulled) is dropped within seconds, not heartbeats',
  async (t) => {
    // Heartbeats every 10 s (the default): the old check, a ping per heartbeat, took 10 to 20 s to notice.
    const server = await fakeControlPlane(t, { heartbeatSeconds: 10, autoPong: false });
    const { connection, logs } = connect(t, server.url, { backoffBaseMs: 20, backoffCapMs: 50 });
    await once(connection, 'welcome');
    const welcomed = Date.now();
    const again = once(connection, 'welcome');
    await server.until(() => server.closes.length > 0);
    const detectedMs = Date.now() - welcomed;
    t.ok(
      detectedMs <= DEAD_AFTER_PINGS * DEFAULT_TIMING.pingIntervalMs + DEFAULT_TIMING.pingIntervalMs + 500,
      `noticed after ${detectedMs} ms`,
    );
    t.ok(detectedMs >= DEAD_AFTER_PINGS * DEFAULT_TIMING.pingIntervalMs - 100, 'not before it was silent that long');
    t.ok(
      logs.some((entry) => entry.msg.includes('stopped answering pings')),
      'logged',
    );
    await again;
    t.pass('and reconnected');
  },
);

t.test('a control plane that answers pings keeps the connection, whatever the heartbeat interval', async (t) => {
  const server = await fakeControlPlane(t, { heartbeatSeconds: 10 });
  const { connection } = connect(t, server.url);
  await once(connection, 'welcome');
  await new Promise((resolve) => setTimeout(resolve, 3 * DEFAULT_TIMING.pingIntervalMs + 500));
  t.same(server.closes, [], 'still connected');
  t.equal(server.attempts(), 1);
});

for (const [code, outcome] of [
  [CLOSE.revoked, 'unauthorized'],
  [CLOSE.unsupportedVersion, 'unsupported'],
  [CLOSE.replaced, 'replaced'],
] as const) {
  t.test(`close code ${code} ends the agent (${outcome}) instead of reconnecting`, async (t) => {
    const server = await fakeControlPlane(t);
    const { connection, done, logs } = connect(t, server.url, { backoffBaseMs: 20, backoffCapMs: 50 });
    await once(connection, 'welcome');
    server.sockets[0].close(code, 'from the test');
    t.equal(await done, outcome);
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.equal(server.attempts(), 1, 'no reconnect');
    t.ok(
      logs.some((entry) => entry.level === 'error'),
      'the reason is logged as an error',
    );
  });
}

t.test('other closes (a restart: 1001; too many bad messages: 4002) are reconnected', async (t) => {
  const server = await fakeControlPlane(t);
  const { connection } = connect(t, server.url, { backoffBaseMs: 20, backoffCapMs: 50 });
  await once(connection, 'welcome');
  server.sockets[0].close(CLOSE.shuttingDown, 'restart');
  await once(connection, 'welcome');
  server.sockets[1].close(CLOSE.tooManyInvalidMessages, 'bad');
  await once(connection, 'welcome');
  t.equal(server.attempts(), 3);
});

t.test('while the server refuses, attempts back off under the cap, then connect', async (t) => {
  const server = await fakeControlPlane(t, { refuse: (attempt) => (attempt < 4 ? 503 : undefined) });
  const { connection, logs } = connect(t, server.url, { backoffBaseMs: 40, backoffCapMs: 120 });
  await once(connection, 'welcome');
  t.equal(server.attempts(), 5, 'four refusals, then the fifth attempt connects');
  const bounds = [40, 80, 120, 120];
  server
    .gaps()
    .forEach((gap, i) => t.ok(gap < bounds[i] + 50, `wait ${i + 1} (${gap} ms) under its bound of ${bounds[i]} ms`));
  t.same(
    logs.filter((entry) => entry.msg.startsWith('disconnected')).map((entry) => entry.fields?.status),
    [503, 503, 503, 503],
  );
});

t.test('a server that never welcomes is dropped after the timeout and retried', async (t) => {
  const server = await fakeControlPlane(t, { welcome: false });
  connect(t, server.url, { welcomeTimeoutMs: 150, backoffBaseMs: 10, backoffCapMs: 20 });
  await server.until(() => server.of('hello').length >= 2);
  t.equal(server.of('hello')[1].socket, 1);
});

t.test('invalid frames are logged and ignored; error messages are logged; the connection carries on', async (t) => {
  const server = await fakeControlPlane(t, { heartbeatSeconds: 1 });
  const { connection, logs } = connect(t, server.url);
  await once(connection, 'welcome');
  const socket = server.sockets[0];
  socket.send('not json');
  socket.send(JSON.stringify({ type: 'launch.missiles' }));
  socket.send(JSON.stringify({ type: 'welcome', protocolVersion: 99, hostId: 'h-2', heartbeatSeconds: 1 }));
  socket.send(JSON.stringify({ type: 'job.assign', jobId: 'j-1', attempt: 1, spec: { command: [] } }));
  socket.send(Buffer.from([1, 2, 3]), { binary: true });
  socket.send(JSON.stringify({ type: 'error', message: 'something broke' }));
  await server.until(() => server.of('heartbeat').length >= 1);

  t.equal(connection.state, 'ready');
  t.equal(server.sockets.length, 1, 'still the first socket');
  const ignored = logs
    .filter((entry) => entry.msg === 'ignored an invalid message from the control plane')
    .map((entry) => entry.fields?.error);
  t.match(ignored, [/not valid JSON/, /unknown message type/, /protocol version 99/, /invalid job.assign/, /binary/]);
  t.match(
    logs.filter((entry) => entry.level === 'error'),
    [{ msg: 'the control plane reported an error', fields: { message: 'something broke' } }],
  );
});

t.test('stop() closes the socket with a normal close and does not reconnect', async (t) => {
  const server = await fakeControlPlane(t);
  const { connection, done } = connect(t, server.url, { backoffBaseMs: 10, backoffCapMs: 20 });
  await once(connection, 'welcome');
  t.equal(await connection.stop(), 'stopped');
  t.equal(await done, 'stopped', 'run() resolves too');
  await server.until(() => server.closes.length === 1);
  t.same(server.closes, [{ code: 1000 }]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.equal(server.attempts(), 1, 'no reconnect after stop');
});

t.test('stop() while waiting to reconnect ends at once', async (t) => {
  const server = await fakeControlPlane(t, { refuse: () => 503 });
  const { connection } = connect(t, server.url, { backoffBaseMs: 60_000, backoffCapMs: 60_000 });
  await server.until(() => server.attempts() === 1 && connection.state === 'waiting');
  t.equal(await connection.stop(), 'stopped');
});

/** `vp-worker run` as a real process; resolves with its exit code and stderr. */
function vpWorkerRun(
  t: Fixtures,
  server: string,
  workerKey: string,
  onStderr?: (text: string, child: ReturnType<typeof spawn>) => void,
) {
  const dir = t.testdir({ 'config.json': JSON.stringify({ server, workerKey, workDir: 'work' }) });
  const child = spawn(
    process.execPath,
    ['worker-agent/bin/vp-worker.js', 'run', '--config', join(dir, 'config.json')],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    onStderr?.(stderr, child);
  });
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stderr })),
  );
}

t.test('vp-worker run: a refused key (401) ends the agent with status 3 after one attempt', async (t) => {
  const server = await fakeControlPlane(t);
  const { code, stderr } = await vpWorkerRun(t, server.url, 'vpw_revoked');
  t.equal(code, 3);
  t.equal(server.attempts(), 1, 'no retries against a refused key');
  const lines = stderr
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { level: string; msg: string; status?: number });
  t.match(lines.at(-1), { level: 'error', msg: /refused the worker key/, status: 401 });
  t.notMatch(stderr, /vpw_revoked/, 'the key itself is never logged');
});

t.test('vp-worker run: SIGTERM closes the socket cleanly and exits 0', async (t) => {
  const server = await fakeControlPlane(t);
  let signalled = false;
  const { code } = await vpWorkerRun(t, server.url, KEY, (stderr, child) => {
    if (signalled || !stderr.includes('connected to the control plane')) return;
    signalled = true;
    child.kill('SIGTERM');
  });
  t.equal(code, 0);
  t.same(server.closes, [{ code: 1000 }]);
});
