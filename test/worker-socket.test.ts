// The worker agents' WebSocket endpoint, driven by a plain `ws` client: key checked before the upgrade,
// hello → welcome marks the host connected, heartbeats, refusals that never take the server down,
// one socket per host, revocation and shutdown closing sockets at once.
import { MAX_MESSAGE_BYTES, PROTOCOL_VERSION } from '@vp/protocol';
import type { Socket } from 'node:net';
import pg from 'pg';
import t, { type Test } from 'tap';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { CLOSE } from '../protocol/src/close-codes.ts';
import { RELEASE_VERSION } from '../control-plane/src/release-version.ts';
import { MAX_INVALID_MESSAGES, MAX_PENDING_BYTES } from '../control-plane/src/workers/worker-session.ts';
import { queueCommand, readJob } from './helpers/host-jobs.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';
import { WorkerClient, enrollHost, helloFrame, testHardware } from './helpers/worker-client.ts';

const server = await startTestServer(t, {
  env: { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000', WORKER_HEARTBEAT_SECONDS: '7' },
});

await server.services().account.createUser('wanda');
await server.services().account.createTeam('ws-team', 'wanda');
const apiKey = (await server.services().apiKeys.create('ws-team', 'team ci')).key;

const hardware = testHardware;
const hello = helloFrame();
const enroll = (name: string) => enrollHost(server, name);
const findHost = (id: string) => server.orm.em.fork().findOneOrFail(Host, { id }) as Promise<Host>;
const findByName = (name: string) => server.orm.em.fork().findOneOrFail(Host, { name }) as Promise<Host>;

const openClient = (key: string | undefined, options: { path?: string; target?: TestServer } = {}) =>
  new WorkerClient(options.target ?? server, key, options);
const welcomed = (key: string, target?: TestServer) => WorkerClient.welcomed(target ?? server, key);

async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The server still accepts and serves a worker after whatever the test did. */
async function serverStillWorks(t: Test, key: string): Promise<void> {
  t.equal((await call(server, 'GET', '/api/health')).status, 200, 'HTTP still served');
  const { client, welcome } = await welcomed(key);
  t.equal(welcome.type, 'welcome', 'a new worker connection still works');
  client.ws.close();
  await client.closed;
}

t.test('hello → welcome marks the host connected with its hardware; heartbeats move lastHeartbeatAt', async (t) => {
  const { hostId, workerKey } = await enroll('ws-01');
  t.equal((await findHost(hostId)).state, 'disconnected');
  const { client, welcome } = await welcomed(workerKey);
  t.same(
    welcome,
    { type: 'welcome', protocolVersion: PROTOCOL_VERSION, hostId, heartbeatSeconds: 7, pool: true },
    'a host of the appliance-wide pool is told so',
  );
  const connected = await findHost(hostId);
  t.equal(connected.state, 'connected');
  t.same(connected.hardware, hardware);
  t.ok(connected.lastHeartbeatAt, 'lastHeartbeatAt set by hello');

  await new Promise((resolve) => setTimeout(resolve, 1100)); // past the heartbeat write throttle
  client.send({ type: 'heartbeat', at: new Date().toISOString() });
  await eventually(
    async () => (await findHost(hostId)).lastHeartbeatAt!.getTime() > connected.lastHeartbeatAt!.getTime(),
    'a newer heartbeat',
  );

  client.ws.close();
  t.equal((await client.closed).code, 1005);
  await eventually(async () => (await findHost(hostId)).state === 'disconnected', 'state disconnected after close');

  await server.services().account.createTeam('ws-own-team', 'wanda');
  const own = await enrollHost(server, 'ws-01-own', 'ws-own-team');
  const { client: ownClient, welcome: ownWelcome } = await welcomed(own.workerKey);
  t.match(
    ownWelcome,
    { type: 'welcome', hostId: own.hostId, pool: false },
    "a workspace's own host is not in the pool",
  );
  ownClient.ws.close();
  await ownClient.closed;
});

t.test('the key is checked before the upgrade: no key, API key, revoked key, wrong path are refused', async (t) => {
  const { workerKey } = await enroll('ws-02');
  t.equal(await openClient(undefined).upgraded, 401, 'no key');
  t.equal(await openClient('vpw_' + '0'.repeat(48)).upgraded, 401, 'unknown worker key');
  t.equal(await openClient(apiKey).upgraded, 401, 'an API key');
  t.equal(await openClient(workerKey, { path: '/api/workers/other' }).upgraded, 404, 'another path');
  t.equal(await openClient(workerKey, { path: '/api/health' }).upgraded, 404, 'an HTTP route');

  // Rotation: once the new token is enrolled the old key is revoked, and its open socket is closed.
  const { client } = await welcomed(workerKey);
  const { enrollmentToken } = await server.services().hosts.rotate('ws-02');
  const rotated = await call<{ workerKey: string }>(server, 'POST', '/api/hosts/enroll', {
    body: { token: enrollmentToken },
  });
  t.match(await client.closed, { code: CLOSE.revoked }, 'the socket of the revoked key is closed');
  t.equal(await openClient(workerKey).upgraded, 401, 'the revoked key');
  await serverStillWorks(t, rotated.body.workerKey);
});

t.test(
  'protocol versions: a hello whose range overlaps the server’s is welcomed with the highest common version',
  async (t) => {
    const { hostId, workerKey } = await enroll('ws-11');
    const newest = PROTOCOL_VERSION + 1;
    const { client, welcome } = await WorkerClient.welcomed(server, workerKey, {
      protocolVersion: newest,
      protocolVersions: { min: 1, max: newest },
    });
    t.same(
      welcome,
      { type: 'welcome', protocolVersion: PROTOCOL_VERSION, hostId, heartbeatSeconds: 7, pool: true },
      `an agent speaking 1..${newest} gets ${PROTOCOL_VERSION}`,
    );
    client.ws.close();
    await client.closed;
    const { client: today, welcome: todays } = await WorkerClient.welcomed(server, workerKey, { protocolVersion: 1 });
    t.match(
      todays,
      { type: 'welcome', protocolVersion: 1 },
      'an agent of before ranges (protocolVersion 1 alone) still works',
    );
    t.notOk('pool' in todays, 'and gets no field it would refuse (pool is protocol 5)');
    today.ws.close();
    await today.closed;
  },
);

t.test('a hello of no common protocol version, or another message first, is answered and closed', async (t) => {
  const { workerKey } = await enroll('ws-03');
  const newer = openClient(workerKey);
  await newer.upgraded;
  newer.send({ ...hello, protocolVersion: PROTOCOL_VERSION + 1 });
  t.same(
    await newer.next(),
    {
      type: 'error',
      message: `no common protocol version: the agent speaks ${PROTOCOL_VERSION + 1}..${PROTOCOL_VERSION + 1}, the control plane 1..${PROTOCOL_VERSION}`,
    },
    'the message names both ranges',
  );
  t.match(await newer.closed, { code: CLOSE.unsupportedVersion, reason: 'unsupported protocol version' });

  const early = openClient(workerKey);
  await early.upgraded;
  early.send({ type: 'heartbeat', at: new Date().toISOString() });
  t.match(await early.next(), { type: 'error', message: 'expected hello, got heartbeat' });
  t.match(await early.closed, { code: CLOSE.handshakeFailed });
  await serverStillWorks(t, workerKey);
});

t.test(
  'malformed and unknown messages get error replies; too many close the socket; the server stays up',
  async (t) => {
    const { workerKey } = await enroll('ws-04');
    const { client } = await welcomed(workerKey);
    client.send('{not json');
    t.same(await client.next(), { type: 'error', message: 'message is not valid JSON' });
    client.send({ type: 'job.steal', jobId: 'x' });
    t.same(await client.next(), { type: 'error', message: 'unknown message type "job.steal"' });
    client.send({ type: 'heartbeat', at: 'yesterday' });
    t.match(await client.next(), { type: 'error', message: /^invalid heartbeat: at/ });
    client.send({ type: 'job.accepted', jobId: 'job-1' });
    t.same(
      await client.next(),
      { type: 'job.cancel', jobId: 'job-1', reason: 'the job is not assigned to this host' },
      'a valid message about a job that is not its own: told to stop it, not counted',
    );
    client.send({ type: 'heartbeat', at: new Date().toISOString() });
    for (let sent = 3; sent < MAX_INVALID_MESSAGES; sent++) client.send('[]');
    t.match(await client.closed, { code: CLOSE.tooManyInvalidMessages });
    await serverStillWorks(t, workerKey);
  },
);

t.test('a frame over the protocol limit closes that connection only', async (t) => {
  const { workerKey } = await enroll('ws-05');
  const { client } = await welcomed(workerKey);
  client.send('x'.repeat(MAX_MESSAGE_BYTES + 1));
  t.match(await client.closed, { code: 1009 }, 'message too big');
  await serverStillWorks(t, workerKey);
});

t.test('a second connection with the same key replaces the first; the host stays connected', async (t) => {
  const { hostId, workerKey } = await enroll('ws-06');
  const first = await welcomed(workerKey);
  t.equal((await findHost(hostId)).agentVersion, RELEASE_VERSION);
  const second = await WorkerClient.welcomed(server, workerKey, { agentVersion: '0.0.1-upgraded' });
  t.equal((await findHost(hostId)).agentVersion, '0.0.1-upgraded', "the newest hello's agent version is the host's");
  t.match(await first.client.closed, { code: CLOSE.replaced, reason: 'replaced by a newer connection' });
  t.equal(second.welcome.type, 'welcome');
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.equal((await findHost(hostId)).state, 'connected', 'the replaced socket did not mark the host disconnected');
  second.client.ws.close();
  await eventually(
    async () => (await findHost(hostId)).state === 'disconnected',
    'disconnected after the current socket closed',
  );
});

t.test('disconnecting the host closes its socket at once', async (t) => {
  const { workerKey } = await enroll('ws-07');
  const { client } = await welcomed(workerKey);
  const started = Date.now();
  await server.services().hosts.disconnect('ws-07');
  t.match(await client.closed, { code: CLOSE.revoked });
  t.ok(Date.now() - started < 2000, 'closed within 2 s');
  t.equal(await openClient(workerKey).upgraded, 401, 'the key no longer connects');
});

t.test('closing the server closes worker sockets (1001) and marks their hosts disconnected first', async (t) => {
  const other = await startTestServer(t, { databaseUrl: server.databaseUrl });
  const { hostId, workerKey } = await enroll('ws-08');
  const { client } = await welcomed(workerKey, other);
  t.equal((await findHost(hostId)).state, 'connected');
  await other.close();
  t.match(await client.closed, { code: CLOSE.shuttingDown });
  t.equal((await findHost(hostId)).state, 'disconnected');
  await serverStillWorks(t, workerKey);
});

t.test(
  "GET /api/hosts shows each GPU's use and the host's CPU and memory from the last heartbeat, while it is connected",
  async (t) => {
    const created = await call<{ enrollmentToken: string }>(server, 'POST', '/api/hosts', {
      key: apiKey,
      body: { name: 'ws-load' },
    });
    const { workerKey } = (
      await call<{ workerKey: string }>(server, 'POST', '/api/hosts/enroll', {
        body: { token: created.body.enrollmentToken },
      })
    ).body;
    const { client } = await welcomed(workerKey);
    const listed = async () =>
      (
        await call<{ hosts: Array<{ name: string; load: unknown; gpus: unknown }> }>(server, 'GET', '/api/hosts', {
          key: apiKey,
        })
      ).body.hosts.find((host) => host.name === 'ws-load')!;
    t.match(
      await listed(),
      {
        load: null,
        gpus: [{ index: 0, model: 'NVIDIA GeForce RTX 4090', memoryMiB: 24_564, utilizationPercent: null }],
      },
      'the GPUs of the hardware report; no load before a heartbeat carries one',
    );
    const load = {
      cpuPercent: 37.5,
      memoryUsedBytes: 12 * 2 ** 30,
      gpus: [{ index: 0, utilizationPercent: 81, memoryUsedMiB: 20_480 }],
    };
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the heartbeat write throttle (hello wrote one)
    client.send({ type: 'heartbeat', at: new Date().toISOString(), load });
    await eventually(async () => (await listed()).load !== null, 'the load to be recorded');
    t.match(await listed(), {
      load: { cpuPercent: 37.5, memoryUsedBytes: 12 * 2 ** 30, memoryBytes: 64 * 2 ** 30 },
      gpus: [{ index: 0, utilizationPercent: 81, memoryUsedMiB: 20_480, memoryMiB: 24_564 }],
    });

    // A load out of range is refused (the socket stays); a heartbeat without one (an older agent) keeps the last.
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the heartbeat write throttle
    client.send({ type: 'heartbeat', at: new Date().toISOString(), load: { ...load, cpuPercent: 250 } });
    t.match(await client.nextOf('error'), { type: 'error' }, 'a CPU use over 100 % is refused');
    client.send({ type: 'heartbeat', at: new Date().toISOString() });
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.match((await listed()).load, { cpuPercent: 37.5 }, 'the last load is kept');

    client.ws.close();
    await client.closed;
    await eventually(async () => (await findHost((await findByName('ws-load')).id)).state === 'disconnected', 'closed');
    t.match(
      await listed(),
      { load: null, gpus: [{ utilizationPercent: null, memoryUsedMiB: null }] },
      'a host not connected shows no load',
    );
  },
);

t.test('GET /api/hosts lists a connected private host with its last heartbeat', async (t) => {
  const created = await call<{ enrollmentToken: string }>(server, 'POST', '/api/hosts', {
    key: apiKey,
    body: { name: 'ws-09' },
  });
  const { workerKey } = (
    await call<{ workerKey: string }>(server, 'POST', '/api/hosts/enroll', {
      body: { token: created.body.enrollmentToken },
    })
  ).body;
  const { client } = await welcomed(workerKey);
  const listed = await call<{ hosts: unknown[] }>(server, 'GET', '/api/hosts', { key: apiKey });
  t.match(listed.body.hosts, [
    {
      name: 'ws-09',
      state: 'connected',
      lastHeartbeatAt: /^\d{4}-/,
      agentVersion: RELEASE_VERSION,
      agentOutdated: false,
    },
  ]);
  client.ws.close();
  await client.closed;
});

t.test(
  'an agent flooding 1 MiB log frames is read only as fast as they are stored; the server keeps answering',
  async (t) => {
    const jobId = await queueCommand(server, 'ws-team', { command: ['chatty'] });
    const { workerKey } = await enrollHost(server, 'ws-10', 'ws-team');
    let serverSide: Socket | undefined;
    const capture = (_req: unknown, socket: Socket) => (serverSide = socket);
    server.server.on('upgrade', capture);
    const { client } = await welcomed(workerKey);
    server.server.off('upgrade', capture);
    t.equal((await client.nextOf('job.assign')).jobId, jobId);
    client.send({ type: 'job.accepted', jobId });
    await eventually(async () => (await readJob(server, jobId)).acceptedAt !== null, 'acceptance');

    // Storing stalls (the job row is locked), as a slow database would; the agent sends 32 MiB meanwhile.
    const blocker = new pg.Client({ connectionString: server.databaseUrl });
    await blocker.connect();
    t.teardown(() => blocker.end());
    await blocker.query('begin');
    await blocker.query('select 1 from jobs where id = $1 for update', [jobId]);
    const frames = 32;
    const lines = Array.from({ length: 64 }, () => 'x'.repeat(16_000));
    const frame = JSON.stringify({ type: 'job.log', jobId, stream: 'stdout', lines });
    t.ok(Buffer.byteLength(frame) <= MAX_MESSAGE_BYTES, 'each frame is within the protocol limit');
    for (let n = 0; n < frames; n++) client.send(frame);
    const flood = frames * Buffer.byteLength(frame);
    await eventually(
      async () => serverSide!.isPaused() || serverSide!.bytesRead >= flood,
      'the server to stop reading or to have read everything',
      15_000,
    );
    t.ok(serverSide!.isPaused(), 'the server stopped reading that socket');
    t.ok(
      serverSide!.bytesRead < MAX_PENDING_BYTES + 4 * MAX_MESSAGE_BYTES,
      `it holds about MAX_PENDING_BYTES, not the flood (${serverSide!.bytesRead} of ${flood} bytes read)`,
    );
    t.equal((await call(server, 'GET', '/api/hosts', { key: apiKey })).status, 200, 'the API still answers');

    await blocker.query('commit');
    const stored = frames * lines.length;
    await eventually(async () => (await readJob(server, jobId)).logLines === stored, 'every line to be stored', 60_000);
    t.ok(serverSide!.bytesRead >= flood, 'reading resumed once the frames were stored');
    client.send({ type: 'job.finished', jobId, outcome: 'completed', exitCode: 0 });
    await eventually(async () => (await readJob(server, jobId)).status === 'completed', 'the job to end');
    client.ws.close();
    await client.closed;
  },
);
