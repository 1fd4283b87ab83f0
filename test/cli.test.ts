// vpctl round trip: a separate vpctl process changes the database of a running control plane, and
// the server sees it at once (keys it had cached included, through LISTEN/NOTIFY).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { enrollAgent } from './helpers/agent.ts';
import { runNode } from './helpers/run-node.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

const KEY = /^ul_[0-9a-f]{40}$/;

/** Runs a vpctl command (`entry` picks the source or the npm bin link). */
const run = (entry: string, args: string[], env: Record<string, string>) => runNode([entry, ...args], env);

function cli(t: { teardown(fn: () => unknown): void }, server: TestServer, settings: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { DATABASE_URL: server.databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'info', ...settings };
  return (...args: string[]) => run('installer/src/vpctl.ts', args, env);
}

async function count(server: TestServer, sql: string): Promise<number> {
  const [row] = await server.orm.em.fork().getConnection().execute<[{ count: string }]>(sql);
  return Number(row.count);
}

t.test('npx vpctl: the bin link runs the CLI', async (t) => {
  const result = await run('node_modules/.bin/vpctl', ['--help'], {});
  t.equal(result.code, 0);
  t.match(result.stdout, /Usage: vpctl/);
  for (const command of ['users', 'workspaces', 'members', 'keys', 'migrate'])
    t.match(result.stdout, new RegExp(`\\n  ${command}\\b`));
  const keys = await run('node_modules/.bin/vpctl', ['keys', '--help'], {});
  t.equal(keys.code, 0);
  for (const command of ['create', 'list', 'revoke']) t.match(keys.stdout, new RegExp(`\\n  ${command}\\b`));
});

t.test('create a key, use it, list it, revoke it: 401 on the very next request', async (t) => {
  const server = await startTestServer(t);
  const vpctl = cli(t, server);

  t.match(
    await vpctl('migrate'),
    { code: 0, stdout: 'Database schema is up to date\n' },
    'the template is migrated already',
  );

  const alice = await vpctl('users', 'create', 'alice', '--name', 'Alice Example');
  t.match(alice, { code: 0, stderr: '' });
  t.match(alice.stdout, /alice/);
  t.match(await vpctl('users', 'create', 'bobby'), { code: 0 });
  t.match(await vpctl('workspaces', 'create', 'acme-vision', '--owner', 'alice', '--name', 'Acme Vision'), { code: 0 });
  const added = await vpctl('members', 'add', 'acme-vision', 'bobby', '--role', 'editor');
  t.match(added, { code: 0 });
  t.match(added.stdout, /bobby.*editor.*acme-vision/);

  const created = await vpctl('keys', 'create', '--workspace', 'acme-vision', '--name', 'ci runner', '--user', 'bobby');
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, /^ul_[0-9a-f]{40}\n$/, 'stdout is exactly one line: the key');
  const key = created.stdout.trim();
  t.match(key, KEY);
  const prefix = key.slice(0, 11);
  t.notMatch(created.stderr, key, 'the key is printed on stdout only');
  t.match(created.stderr, prefix, 'the note on stderr names the prefix');

  const summary = await call(server, 'GET', '/api/account/summary', { key });
  t.equal(summary.status, 200);
  t.match(summary.body, {
    username: 'acme-vision',
    accountType: 'team',
    role: 'editor',
    actingUser: { username: 'bobby' },
  });

  const ownerKey = (await vpctl('keys', 'create', '--workspace', 'alice', '--name', 'laptop')).stdout.trim();
  t.match(ownerKey, KEY);
  const own = await call(server, 'GET', '/api/account/summary', { key: ownerKey });
  t.equal(own.status, 200);
  t.match(own.body, { username: 'alice', name: 'Alice Example', role: 'owner', accountType: 'personal' });

  const listed = await vpctl('keys', 'list');
  t.equal(listed.code, 0);
  const lines = listed.stdout.trimEnd().split('\n');
  t.match(lines[0], /^PREFIX\s+WORKSPACE\s+USER\s+NAME\s+CREATED\s+LAST USED$/);
  t.equal(lines.length, 1 + (await count(server, 'select count(*) from api_keys')), 'a header and a line per key');
  t.match(listed.stdout, new RegExp(`${prefix}\\s+acme-vision\\s+bobby\\s+ci runner\\s+\\d{4}-\\d\\d-\\d\\dT`));
  t.match(listed.stdout, ownerKey.slice(0, 11));
  t.notMatch(listed.stdout, key, 'never the key');
  t.notMatch(listed.stdout, ownerKey, 'never the key');
  const filtered = await vpctl('keys', 'list', '--workspace', 'alice');
  t.equal(filtered.code, 0);
  t.notMatch(filtered.stdout, prefix, '--workspace lists only that workspace');
  t.match(filtered.stdout, ownerKey.slice(0, 11));

  // The server has the key cached now; revoking it in another process must still take effect at once.
  t.equal((await call(server, 'GET', '/api/account/summary', { key })).status, 200);
  const revoked = await vpctl('keys', 'revoke', prefix);
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, prefix);
  const after = await call(server, 'GET', '/api/account/summary', { key });
  t.equal(after.status, 401, 'the very next request is refused');
  t.same(after.body, { error: 'Invalid API key' });
  t.equal((await call(server, 'GET', '/api/account/summary', { key: ownerKey })).status, 200, 'other keys still work');
  t.notMatch((await vpctl('keys', 'list')).stdout, prefix, 'gone from the list');
  t.match(await vpctl('keys', 'revoke', prefix), {
    code: 1,
    stdout: '',
    stderr: `vpctl: No API key with prefix ${prefix}\n`,
  });

  // Removing a member also ends their keys at once.
  const memberKey = (
    await vpctl('keys', 'create', '--workspace', 'acme-vision', '--name', 'second', '--user', 'bobby')
  ).stdout.trim();
  t.equal((await call(server, 'GET', '/api/account/summary', { key: memberKey })).status, 200);
  t.match(await vpctl('members', 'remove', 'acme-vision', 'bobby'), { code: 0 });
  t.equal(
    (await call(server, 'GET', '/api/account/summary', { key: memberKey })).status,
    401,
    'a removed member’s key is refused at once',
  );
});

t.test('failures: exit 1 with one clear line on stderr, nothing created', async (t) => {
  const server = await startTestServer(t);
  const vpctl = cli(t, server);
  const before = await count(
    server,
    'select (select count(*) from users) + (select count(*) from workspaces) + (select count(*) from api_keys) as count',
  );

  const badUser = await vpctl('users', 'create', 'Bad_Handle');
  t.equal(badUser.code, 1);
  t.equal(badUser.stdout, '');
  t.match(
    badUser.stderr,
    /^vpctl: "Bad_Handle": handles are 4-32 lowercase letters or digits, with single hyphens between segments\n$/,
  );

  t.match(await vpctl('users', 'create', 'abc'), { code: 1, stdout: '', stderr: /^vpctl: .*4-32.*\n$/ }, 'too short');
  t.match(await vpctl('users', 'create', 'long-name', '--name', 'x'.repeat(101)), {
    code: 1,
    stdout: '',
    stderr: 'vpctl: name: must be 1-100 characters\n',
  });
  t.match(await vpctl('workspaces', 'create', 'team--x', '--owner', 'nobody'), {
    code: 1,
    stdout: '',
    stderr: /^vpctl: "team--x": handles/,
  });
  t.match(await vpctl('workspaces', 'create', 'good-team', '--owner', 'nobody'), {
    code: 1,
    stdout: '',
    stderr: 'vpctl: User "nobody" not found\n',
  });
  t.match(await vpctl('keys', 'create', '--workspace', 'nowhere', '--name', 'x'), {
    code: 1,
    stdout: '',
    stderr: 'vpctl: Workspace "nowhere" not found\n',
  });
  t.match(await vpctl('keys', 'list', '--workspace', 'nowhere'), {
    code: 1,
    stdout: '',
    stderr: 'vpctl: Workspace "nowhere" not found\n',
  });
  t.match(await vpctl('keys', 'revoke', 'not-a-prefix'), { code: 1, stdout: '', stderr: /^vpctl: prefix: / });
  t.match(await vpctl('members', 'add', 'nowhere', 'nobody', '--role', 'viewer'), {
    code: 1,
    stdout: '',
    stderr: /^vpctl: Workspace "nowhere" not found\n$/,
  });

  const after = await count(
    server,
    'select (select count(*) from users) + (select count(*) from workspaces) + (select count(*) from api_keys) as count',
  );
  t.equal(after, before, 'nothing was created');
});

t.test('usage errors exit 2 before touching the database', async (t) => {
  // A database URL nobody answers: a usage error must be reported without connecting.
  const env = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', DATA_DIR: tmpdir() };
  const cases = [
    ['bogus'],
    [],
    ['users'],
    ['users', 'create'],
    ['workspaces', 'create', 'some-team'],
    ['members', 'add', 'some-team', 'someone', '--role', 'owner'],
    ['members', 'add', 'some-team', 'someone'],
    ['keys', 'create', '--workspace', 'some-team'],
    ['keys', 'list', '--bogus'],
  ];
  for (const args of cases) {
    const result = await run('installer/src/vpctl.ts', args, env);
    t.equal(result.code, 2, `vpctl ${args.join(' ')} → 2`);
    t.equal(result.stdout, '', 'nothing on stdout');
    t.not(result.stderr, '', 'the problem on stderr');
  }
  const role = await run('installer/src/vpctl.ts', ['members', 'add', 'some-team', 'someone', '--role', 'owner'], env);
  t.match(role.stderr, /Allowed choices are viewer, editor, admin/);
  const config = await run('installer/src/vpctl.ts', ['migrate'], { ...env, REGION: 'mars' });
  t.equal(config.code, 78, 'invalid configuration');
  t.match(config.stderr, /^vpctl: Invalid configuration: REGION/);
});

t.test(
  'hosts connect prints a command with the appliance’s address: PUBLIC_BASE_URL, else HOST and PORT, never localhost',
  async (t) => {
    const server = await startTestServer(t);
    let hosts = 0;
    /** The --server and --token of the command `vpctl hosts connect` prints on stderr under `settings`. */
    const printed = async (settings: Record<string, string>) => {
      const result = await cli(t, server, settings)('hosts', 'connect', `gpu-${++hosts}`);
      t.equal(result.code, 0, result.stderr);
      const token = result.stdout.trim();
      const command = /\n {2}vp-worker enroll --server (\S+) --token (\S+)\n/.exec(result.stderr);
      t.equal(command?.[2], token, 'the command carries the token printed on stdout');
      return { server: command?.[1], token };
    };
    t.equal(
      (await printed({ PUBLIC_BASE_URL: 'https://vision.example.internal/' })).server,
      'https://vision.example.internal',
    );
    t.equal((await printed({ HOST: '192.0.2.10', PORT: '8080' })).server, 'http://192.0.2.10:8080');
    t.equal((await printed({ HOST: 'fd00::10' })).server, 'http://[fd00::10]:3000');
    t.equal((await printed({ HOST: 'vision.corp.internal', PORT: '80' })).server, 'http://vision.corp.internal:80');
    t.equal(
      (await printed({ HOST: '0.0.0.0', PORT: '8080' })).server,
      `http://${hostname()}:8080`,
      'listening everywhere: this machine’s name',
    );
    t.equal((await printed({})).server, `http://${hostname()}:3000`, 'the defaults');

    // The command as printed, run on a "host": it reaches the appliance and enrolls.
    const { port } = new URL(server.url);
    const enrollment = await printed({ HOST: '127.0.0.1', PORT: port });
    t.equal(enrollment.server, server.url);
    const dir = mkdtempSync(join(tmpdir(), 'vp-cli-host-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    await enrollAgent(t, enrollment.server!, enrollment.token, join(dir, 'config.json'));
    t.match(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')), {
      server: server.url,
      hostName: `gpu-${hosts}`,
    });
  },
);
