// Hosts and worker keys: vpctl and the API connect hosts, a real `vp-worker enroll` process exchanges
// the one-time token for a worker key, and worker keys and API keys never pass for each other.
import { chownSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import t from 'tap';
import { WORKER_KEYS_CHANNEL, findWorkerByKey } from '../control-plane/src/hosts/worker-key-lookup.ts';
import { runNode } from './helpers/run-node.ts';
import { call, startTestServer } from './helpers/server.ts';

const TOKEN = /^vpe_[0-9a-f]{32}$/;

function tempDir(t: { teardown(fn: () => unknown): void }, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000' } });
const dataDir = tempDir(t, 'vp-hosts-');
const vpctl = (...args: string[]) =>
  runNode(['installer/src/vpctl.ts', ...args], {
    DATABASE_URL: server.databaseUrl,
    DATA_DIR: dataDir,
    PUBLIC_BASE_URL: server.url,
  });
const vpWorker = (...args: string[]) => runNode(['worker-agent/bin/vp-worker.js', ...args]);
const lookup = (key: string) => findWorkerByKey(server.orm.em.fork() as unknown as EntityManager, key);
const enrollOverHttp = (token: string) =>
  call<{ hostId: string; name: string; workerKey: string; error?: string }>(server, 'POST', '/api/hosts/enroll', {
    body: { token },
  });

const account = server.services().account;
for (const username of ['alice', 'bobby', 'eddie', 'adam']) await account.createUser(username);
await account.createTeam('acme-team', 'alice');
await account.setMemberRole('acme-team', 'eddie', 'editor');
await account.setMemberRole('acme-team', 'adam', 'admin');
const apiKeys = server.services().apiKeys;
const keys = {
  team: (await apiKeys.create('acme-team', 'team ci')).key,
  editor: (await apiKeys.create('acme-team', 'eddie', 'eddie')).key,
  admin: (await apiKeys.create('acme-team', 'adam', 'adam')).key,
  bobby: (await apiKeys.create('bobby', 'bobby laptop')).key,
};

t.test('vpctl connect, then a real vp-worker enroll writes a 0600 config holding a working worker key', async (t) => {
  const connected = await vpctl('hosts', 'connect', 'gpu-01');
  t.equal(connected.code, 0, connected.stderr);
  t.match(connected.stdout, /^vpe_[0-9a-f]{32}\n$/, 'stdout is exactly the token');
  const token = connected.stdout.trim();
  t.match(
    connected.stderr,
    `vp-worker enroll --server ${server.url} --token ${token}`,
    'the command to run is a note on stderr',
  );
  t.match(
    connected.stderr,
    `\n  sudo ./install-worker.sh --server ${server.url} --token ${token}\n`,
    'and the install line, which keeps a working key',
  );
  t.match(connected.stderr, /Single use, expires \d{4}-/);

  const configDir = join(tempDir(t, 'vp-agent-'), 'vp-worker');
  const configPath = join(configDir, 'config.json');
  // Exactly what the note says to run, with --config pointing into the test's directory.
  const command = /vp-worker (enroll --server \S+ --token \S+)/.exec(connected.stderr)?.[1].split(' ') ?? [];
  const enrolled = await vpWorker(...command, '--config', configPath);
  t.equal(enrolled.code, 0, enrolled.stderr);
  t.match(enrolled.stdout, `Enrolled as host gpu-01; worker key saved to ${configPath}`);
  t.equal(statSync(configPath).mode & 0o777, 0o600, 'config file is 0600');
  t.equal(statSync(configDir).mode & 0o777, 0o700, 'config directory is 0700');
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as {
    server: string;
    workerKey: string;
    hostId: string;
    hostName: string;
  };
  t.match(config, { server: server.url, workerKey: /^vpw_[0-9a-f]{48}$/, hostName: 'gpu-01' });
  t.notMatch(enrolled.stdout + enrolled.stderr, config.workerKey, 'the key is never printed');
  t.match(await lookup(config.workerKey), {
    hostId: config.hostId,
    hostName: 'gpu-01',
    workspaceId: null,
    keyPrefix: config.workerKey.slice(0, 12),
  });

  const [stored] = await server.orm.em
    .fork()
    .getConnection()
    .execute<[{ key_hash: string }]>('select key_hash from worker_keys');
  t.not(stored.key_hash, config.workerKey, 'only a hash is stored');

  const again = await vpWorker(
    'enroll',
    '--server',
    server.url,
    '--token',
    token,
    '--config',
    join(configDir, 'other.json'),
  );
  t.equal(again.code, 1);
  t.match(again.stderr, 'enrollment refused (410): Enrollment token already used');

  const listed = await vpctl('hosts', 'list');
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /^NAME\s+WORKSPACE\s+STATE\s+LAST HEARTBEAT\s+HARDWARE\s+AGENT\s+EXPORTERS\s+RUNNING JOBS\n/);
  t.match(listed.stdout, /gpu-01\s+\(pool\)\s+disconnected\s+never\s+not reported\s+-\s+-\s+-\n/);
  t.match(
    await vpctl('hosts', 'connect', 'gpu-01'),
    {
      code: 1,
      stderr:
        'vpctl: A host named "gpu-01" already exists; to enroll it again, get a new token with vpctl hosts rotate gpu-01\n',
    },
    'one name per scope',
  );
});

t.test('worker keys and API keys never pass for each other', async (t) => {
  const { enrollmentToken } = await server.services().hosts.connect('gpu-02');
  const { workerKey } = (await enrollOverHttp(enrollmentToken)).body;
  for (const path of ['/api/account/summary', '/api/api-keys', '/api/hosts']) {
    const response = await call(server, 'GET', path, { key: workerKey });
    t.equal(response.status, 401, `worker key on ${path}`);
    t.same(response.body, { error: 'Invalid API key' });
  }
  t.equal(await lookup(keys.team), null, 'an API key is not a worker key');
  t.equal(await lookup(`vpw_${keys.team.slice(3)}00000000`), null, 'nor is one dressed up as one');
  const listed = await call<{ keys: Array<{ prefix: string }> }>(server, 'GET', '/api/api-keys', { key: keys.team });
  t.equal(listed.status, 200);
  t.same(
    listed.body.keys.map((key) => key.prefix.slice(0, 3)),
    ['ul_', 'ul_', 'ul_'],
    'worker keys are never listed with API keys',
  );
});

t.test('enrollment tokens: unknown 401, expired 410, single use', async (t) => {
  t.match(await enrollOverHttp(`vpe_${'0'.repeat(32)}`), { status: 401, body: { error: 'Invalid enrollment token' } });
  t.match(await enrollOverHttp('not-a-token'), { status: 401 });
  const { enrollmentToken, expiresAt } = await server.services().hosts.connect('gpu-03', 'acme-team');
  t.ok(Math.abs(Date.parse(expiresAt) - Date.now() - 600_000) < 30_000, 'expires in 10 minutes');
  await server.orm.em
    .fork()
    .getConnection()
    .execute("update enrollment_tokens set expires_at = now() - interval '1 second' where used_at is null");
  t.match(await enrollOverHttp(enrollmentToken), { status: 410, body: { error: 'Enrollment token expired' } });
});

t.test(
  'rotate: the old key works until the new token is enrolled; disconnect revokes at once and is announced',
  async (t) => {
    const hosts = server.services().hosts;
    const first = await hosts.connect('gpu-04', 'acme-team');
    const oldKey = (await enrollOverHttp(first.enrollmentToken)).body.workerKey;

    const rotated = await vpctl('hosts', 'rotate', 'gpu-04');
    t.equal(rotated.code, 0, rotated.stderr);
    const newToken = rotated.stdout.trim();
    t.match(newToken, TOKEN);
    t.match(
      rotated.stderr,
      `\n  sudo ./install-worker.sh --server ${server.url} --token ${newToken} --reenroll\n`,
      'a rotation replaces a working key: --reenroll',
    );
    const unused = await hosts.rotate('gpu-04', 'acme-team');
    t.match(await enrollOverHttp(newToken), { status: 401 }, 'a newer rotation voids the earlier unused token');
    t.ok(await lookup(oldKey), 'the old key still works before the new token is enrolled');
    const newKey = (await enrollOverHttp(unused.enrollmentToken)).body.workerKey;
    t.equal(await lookup(oldKey), null, 'enrolling the new token revokes the old key');
    t.ok(await lookup(newKey));

    const listener = new pg.Client({ connectionString: server.databaseUrl });
    await listener.connect();
    t.teardown(() => listener.end());
    const announced = new Promise<string | undefined>((resolve) =>
      listener.on('notification', (message) => resolve(message.payload)),
    );
    await listener.query(`LISTEN ${WORKER_KEYS_CHANNEL}`);
    const hostId = (await lookup(newKey))?.hostId;
    const disconnected = await vpctl('hosts', 'disconnect', 'gpu-04', '--workspace', 'acme-team');
    t.equal(disconnected.code, 0, disconnected.stderr);
    t.match(disconnected.stdout, 'Disconnected host gpu-04 of workspace acme-team');
    t.equal(await lookup(newKey), null, 'refused at once');
    t.equal(await announced, hostId, 'announced on the worker-key channel with the host id');
    t.match(await vpctl('hosts', 'disconnect', 'gpu-04'), { code: 1, stderr: 'vpctl: Host "gpu-04" not found\n' });
    t.match(
      await vpctl('hosts', 'rotate', 'gpu-04', '--workspace', 'acme-team'),
      {
        code: 1,
        stderr:
          'vpctl: Host "gpu-04" not found: disconnecting removes a host; to enroll the machine again, connect it again (vpctl hosts connect gpu-04 --workspace acme-team)\n',
      },
      'rotating a disconnected host says how to bring it back',
    );
  },
);

t.test('API: owner and admin manage private hosts of their workspace only', async (t) => {
  const created = await call<{ host: string; enrollmentToken: string; command: string }>(server, 'POST', '/api/hosts', {
    key: keys.admin,
    body: { name: 'team-box' },
  });
  t.equal(created.status, 201);
  t.match(created.body, { host: 'team-box', enrollmentToken: TOKEN, expiresAt: String });
  t.equal(
    created.body.command,
    `vp-worker enroll --server ${server.url} --token ${created.body.enrollmentToken}`,
    'the address the server is reached at',
  );
  t.match(await call(server, 'POST', '/api/hosts', { key: keys.team, body: { name: 'team-box' } }), { status: 409 });
  t.match(await call(server, 'POST', '/api/hosts', { key: keys.team, body: { name: '-bad' } }), { status: 400 });

  const listed = await call<{ hosts: Array<{ name: string; state: string; pool: boolean }>; total: number }>(
    server,
    'GET',
    '/api/hosts',
    { key: keys.team },
  );
  t.equal(listed.status, 200);
  t.same(
    listed.body.hosts.map((host) => `${host.name}:${host.pool ? 'pool' : 'private'}`),
    ['gpu-03:private', 'team-box:private', 'gpu-01:pool', 'gpu-02:pool'],
    "the workspace's own hosts, then the pool's it can use",
  );
  t.match(listed.body.hosts[0], {
    lastHeartbeatAt: null,
    hardware: null,
    agentVersion: null,
    agentOutdated: false,
    exporters: [],
    missingExporters: {},
    createdAt: String,
  });

  t.match(await call(server, 'GET', '/api/hosts', { key: keys.editor }), { status: 403 });
  t.match(await call(server, 'POST', '/api/hosts', { key: keys.editor, body: { name: 'sneaky' } }), { status: 403 });
  t.match(await call(server, 'DELETE', '/api/hosts/team-box', { key: keys.editor }), { status: 403 });
  t.match(await call(server, 'GET', '/api/hosts', {}), { status: 401 });

  const strangers = await call<{ hosts: Array<{ name: string; pool: boolean }>; total: number }>(
    server,
    'GET',
    '/api/hosts',
    { key: keys.bobby },
  );
  t.same(
    strangers.body.hosts.map((host) => `${host.name}:${host.pool ? 'pool' : 'private'}`),
    ['gpu-01:pool', 'gpu-02:pool'],
    "another workspace's private hosts are not listed",
  );
  t.match(
    await call(server, 'POST', '/api/hosts/gpu-01/rotate', { key: keys.team }),
    { status: 404 },
    'pool hosts are listed, not managed, through the API',
  );
  t.match(
    await call(server, 'DELETE', '/api/hosts/team-box', { key: keys.bobby }),
    { status: 404 },
    "another workspace's host is 404",
  );
  t.match(await call(server, 'POST', '/api/hosts/team-box/rotate', { key: keys.bobby }), { status: 404 });
  t.match(
    await call(server, 'DELETE', '/api/hosts/gpu-01', { key: keys.team }),
    { status: 404 },
    'pool hosts are operator-only',
  );

  const rotated = await call<{ enrollmentToken: string }>(server, 'POST', '/api/hosts/team-box/rotate', {
    key: keys.team,
  });
  t.equal(rotated.status, 200);
  t.match(await enrollOverHttp(created.body.enrollmentToken), { status: 401 }, 'the replaced token is void');
  const enrolled = await enrollOverHttp(rotated.body.enrollmentToken);
  t.match(enrolled, { status: 200, body: { name: 'team-box' } });

  t.match(await call(server, 'DELETE', '/api/hosts/team-box', { key: keys.admin }), {
    status: 200,
    body: { name: 'team-box', disconnected: true },
  });
  t.equal(await lookup(enrolled.body.workerKey), null, 'the key is revoked with the host');
  t.match(await call(server, 'DELETE', '/api/hosts/team-box', { key: keys.admin }), { status: 404 });
});

t.test(
  'vp-worker check tells a working key from a refused one and says how to enroll again, which keeps the config owner',
  async (t) => {
    const connected = await vpctl('hosts', 'connect', 'gpu-05');
    const configPath = join(tempDir(t, 'vp-agent-'), 'config.json');
    t.equal(
      (await vpWorker('enroll', '--server', server.url, '--token', connected.stdout.trim(), '--config', configPath))
        .code,
      0,
    );
    const accepted = await vpWorker('check', '--config', configPath);
    t.equal(accepted.code, 0, accepted.stderr);
    t.equal(accepted.stdout, `${server.url} accepts the worker key of host gpu-05 (${configPath})\n`);
    t.match(
      await lookup((JSON.parse(readFileSync(configPath, 'utf8')) as { workerKey: string }).workerKey),
      { hostName: 'gpu-05' },
      'checking uses the key, changes nothing',
    );

    t.equal((await vpctl('hosts', 'disconnect', 'gpu-05')).code, 0);
    const refused = await vpWorker('check', '--config', configPath);
    t.equal(refused.code, 3, 'the status `vp-worker run` stops with on a refused key');
    t.match(
      refused.stderr,
      `vp-worker: ${server.url} refuses the worker key of host gpu-05 (${configPath}): to enroll this host again, on the appliance run \`vpctl hosts rotate gpu-05\``,
    );
    t.match(
      refused.stderr,
      `\`vpctl hosts connect gpu-05 [--workspace W]\` when \`vpctl hosts list\` no longer lists it`,
    );
    t.match(refused.stderr, `\`vp-worker enroll --server ${server.url} --token TOKEN --config ${configPath}\``);
    t.match(await vpctl('hosts', 'rotate', 'gpu-05'), {
      code: 1,
      stderr: /not found: disconnecting removes a host; .*\(vpctl hosts connect gpu-05 \[--workspace W\]\)/,
    });

    // What it says, run as root for an agent that runs as a user of its own: that user keeps its config.
    const again = await vpctl('hosts', 'connect', 'gpu-05');
    t.equal(again.code, 0, again.stderr);
    const root = process.getuid?.() === 0;
    if (root) chownSync(configPath, 65534, 65534);
    const enrolled = await vpWorker(
      'enroll',
      '--server',
      server.url,
      '--token',
      again.stdout.trim(),
      '--config',
      configPath,
    );
    t.equal(enrolled.code, 0, enrolled.stderr);
    if (root)
      t.match(statSync(configPath), { uid: 65534, gid: 65534, mode: 0o100600 }, "the agent's user still owns it");
    t.equal((await vpWorker('check', '--config', configPath)).code, 0, 'the new key is taken');
    t.match(await vpWorker('check', '--config', join(tempDir(t, 'vp-agent-'), 'none.json')), {
      code: 1,
      stderr: /cannot check the worker key: Invalid configuration: .*does not exist/,
    });
  },
);
