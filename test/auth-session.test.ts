// Console sign-in with a password (README, Identity and access): a real control plane, real HTTP, real PostgreSQL.
// Sessions act exactly as the user's key for the same workspace would; keys keep working beside them.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { expectError as isError } from './helpers/expect.ts';
import { call, startTestServer, type Fetched } from './helpers/server.ts';

interface Teardown {
  teardown(fn: () => unknown): void;
}
/** A 429's body carries when to retry. */
const LIMITED = ['retryAfter', 'resetAt'];
interface SessionBody {
  session: { username: string; owner: string; role: string; csrfToken: string; expiresAt: string };
}

// Client addresses come from X-Forwarded-For (TRUST_PROXY), so each test fails from addresses of its own.
const server = await startTestServer(t, {
  env: {
    TRUST_PROXY: 'true',
    AUTH_FAILURE_LIMIT: '4',
    SESSION_HOURS: '2',
    RATE_LIMIT_DEFAULT: '100000',
    RATE_LIMIT_MUTATION: '100000',
  },
});
const account = server.services().account;
for (const username of ['alice', 'bobby', 'vicky', 'eddie']) await account.createUser(username);
await account.createTeam('acme-team', 'alice', 'Acme Vision');
await account.setMemberRole('acme-team', 'vicky', 'viewer');
await account.setMemberRole('acme-team', 'eddie', 'editor');
const apiKeys = server.services().apiKeys;
const keys = {
  alice: (await apiKeys.create('alice', 'alice laptop')).key,
  team: (await apiKeys.create('acme-team', 'team ci')).key,
  vicky: (await apiKeys.create('acme-team', 'vicky key', 'vicky')).key,
  bobby: (await apiKeys.create('bobby', 'bobby laptop')).key,
};
const PASSWORDS = {
  alice: 'alice-correct-horse',
  bobby: 'bobby-battery-staple',
  vicky: 'vicky-viewer-pass',
  eddie: 'eddie-edits-1',
};

/** `vpctl users password <username>` with the password on stdin, against the server's database. */
function vpctlPassword(
  t: Teardown,
  username: string,
  password: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['installer/src/vpctl.ts', 'users', 'password', username], {
      env: { ...process.env, DATABASE_URL: server.databaseUrl, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(`${password}\n`);
  });
}

async function rows(sql: string, params: unknown[] = []): Promise<Array<Record<string, unknown>>> {
  return server.orm.em.fork().getConnection().execute(sql, params);
}

function cookieOf(response: Fetched<object>): string {
  const header = response.headers.get('set-cookie') ?? '';
  const match = /(?:^|, )vp_session=([^;]*)/.exec(header);
  if (!match) throw new Error(`no vp_session cookie in ${header}`);
  return match[1];
}

async function login(
  username: string,
  password: string,
  options: { address?: string; workspace?: string } = {},
): Promise<Fetched<SessionBody>> {
  return call<SessionBody>(server, 'POST', '/api/auth/login', {
    body: { username, password, ...(options.workspace ? { workspace: options.workspace } : {}) },
    headers: { 'x-forwarded-for': options.address ?? '10.0.0.1' },
  });
}

async function signIn(
  username: keyof typeof PASSWORDS,
  workspace?: string,
): Promise<{ cookie: string; csrf: string; body: SessionBody }> {
  const response = await login(username, PASSWORDS[username], { workspace });
  if (response.status !== 200)
    throw new Error(`sign-in of ${username}: ${response.status} ${JSON.stringify(response.body)}`);
  return { cookie: cookieOf(response), csrf: response.body.session.csrfToken, body: response.body };
}

/** A request with the session cookie (and the CSRF header when given). */
function withCookie<T = Record<string, unknown>>(
  method: string,
  path: string,
  cookie: string,
  options: { csrf?: string; body?: unknown } = {},
) {
  return call<T>(server, method, path, {
    body: options.body,
    headers: { cookie: `vp_session=${cookie}`, ...(options.csrf ? { 'x-csrf-token': options.csrf } : {}) },
  });
}

t.test('passwords: set with the personal key or vpctl users password (stdin)', async (tt) => {
  // alice sets her own password with the key of her personal workspace; the others through vpctl.
  const team = await call(server, 'PUT', '/api/auth/password', { key: keys.team, body: { password: PASSWORDS.alice } });
  isError(tt, team, 403, /personal workspace/);
  const short = await call(server, 'PUT', '/api/auth/password', { key: keys.alice, body: { password: 'short' } });
  isError(tt, short, 400, /8-256 characters/);
  const set = await call(server, 'PUT', '/api/auth/password', { key: keys.alice, body: { password: PASSWORDS.alice } });
  tt.equal(set.status, 204);
  for (const username of ['bobby', 'vicky', 'eddie'] as const) {
    const result = await vpctlPassword(tt, username, PASSWORDS[username]);
    tt.equal(result.code, 0, result.stderr);
    tt.match(result.stdout, `Set the console password of ${username}`);
  }
  const missing = await vpctlPassword(tt, 'nobody-here', 'whatever-password');
  tt.equal(missing.code, 1);
  tt.match(missing.stderr, /No user nobody-here/);
});

t.test('providers: password only when no OIDC provider is configured', async (t) => {
  const response = await call(server, 'GET', '/api/auth/providers');
  t.equal(response.status, 200);
  t.same(response.body, { password: true, oidc: null });
});

t.test('password sign-in sets an HttpOnly SameSite cookie whose hash alone is stored', async (t) => {
  const before = Date.now();
  const response = await login('alice', PASSWORDS.alice);
  t.equal(response.status, 200);
  const header = response.headers.get('set-cookie')!;
  t.match(header, /^vp_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Lax; Path=\/; Max-Age=7200$/);
  t.notMatch(header, /Secure/, 'http base URL: no Secure flag');
  const { session } = response.body;
  t.match(session, { username: 'alice', owner: 'alice', role: 'owner', csrfToken: /^[A-Za-z0-9_-]{43}$/ });
  const hours = (Date.parse(session.expiresAt) - before) / 3_600_000;
  t.ok(hours > 1.99 && hours < 2.01, `expires SESSION_HOURS after sign-in (${hours} h)`);
  const cookie = cookieOf(response);
  const stored = await rows('select token_hash from auth_sessions where token_hash = ?', [
    createHash('sha256').update(cookie).digest('hex'),
  ]);
  t.equal(stored.length, 1, 'the row holds the SHA-256 of the cookie');
  t.equal((await rows('select 1 from auth_sessions where token_hash = ?', [cookie])).length, 0);
  const hash = await rows(
    `select p.hash from user_passwords p join users u on u.id = p.user_id where u.username = 'alice'`,
  );
  t.match(hash[0].hash, /^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
});

t.test('a wrong password and an unknown user are the same 401', async (t) => {
  isError(t, await login('alice', 'not-her-password', { address: '10.1.0.1' }), 401, 'Wrong username or password');
  isError(
    t,
    await login('nobody-at-all', 'whatever-it-is', { address: '10.1.0.2' }),
    401,
    'Wrong username or password',
  );
  const noCookie = await login('alice', 'not-her-password', { address: '10.1.0.3' });
  t.equal(noCookie.headers.get('set-cookie'), null);
});

t.test('the cookie works on existing routes, as the same actor as the key', async (t) => {
  const { cookie, csrf } = await signIn('alice');
  const byKey = await call(server, 'GET', '/api/workspaces/acme-team/members', { key: keys.alice });
  const teamByCookie = await withCookie('GET', '/api/workspaces/alice/members', cookie);
  const ownByKey = await call(server, 'GET', '/api/workspaces/alice/members', { key: keys.alice });
  t.equal(teamByCookie.status, 200);
  t.same(teamByCookie.body, ownByKey.body);
  t.equal(byKey.status, 403, "alice's personal key does not reach her team's members");
  isError(t, await withCookie('GET', '/api/workspaces/acme-team/members', cookie), 403);

  const created = await withCookie('POST', '/api/datasets', cookie, {
    csrf,
    body: { dataset: 'shapes', name: 'Shapes' },
  });
  t.equal(created.status, 201);
  t.match(created.body, { owner: 'alice', dataset: 'shapes' });
  const read = await call(server, 'GET', '/api/datasets/alice/shapes', { key: keys.alice });
  t.equal(read.status, 200, 'what the session made, the key reads');
});

t.test('a cookie-authenticated change without the CSRF header is 403', async (t) => {
  const { cookie, csrf } = await signIn('alice');
  const body = { dataset: 'csrf-check', name: 'CSRF' };
  isError(t, await withCookie('POST', '/api/datasets', cookie, { body }), 403, /X-CSRF-Token/);
  isError(
    t,
    await withCookie('POST', '/api/datasets', cookie, {
      body,
      csrf: `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}`,
    }),
    403,
    /X-CSRF-Token/,
  );
  const other = await signIn('alice');
  // Another session's token does not do either.
  isError(t, await withCookie('POST', '/api/datasets', cookie, { body, csrf: other.csrf }), 403, /X-CSRF-Token/);
  t.equal(
    (await call(server, 'GET', '/api/datasets/alice/csrf-check', { key: keys.alice })).status,
    404,
    'nothing made',
  );
  t.equal((await withCookie('POST', '/api/datasets', cookie, { body, csrf })).status, 201);
  // A key needs no CSRF token, with or without a cookie beside it: browsers never send Authorization by themselves.
  const keyed = await call(server, 'POST', '/api/datasets', {
    key: keys.alice,
    body: { dataset: 'by-key', name: 'By key' },
    headers: { cookie: `vp_session=${cookie}` },
  });
  t.equal(keyed.status, 201);
});

t.test("a viewer's session is refused an edit, as the viewer's key is", async (t) => {
  const { cookie, csrf, body } = await signIn('vicky', 'acme-team');
  t.match(body.session, { username: 'vicky', owner: 'acme-team', role: 'viewer' });
  const edit = { dataset: 'viewer-try', name: 'Viewer', owner: 'acme-team' };
  const byKey = await call(server, 'POST', '/api/datasets', { key: keys.vicky, body: edit });
  const bySession = await withCookie('POST', '/api/datasets', cookie, { csrf, body: edit });
  t.equal(byKey.status, 403);
  t.equal(bySession.status, 403);
  t.same(bySession.body, byKey.body);
  const listed = await withCookie('GET', '/api/workspaces/acme-team/members', cookie);
  t.equal(listed.status, 200, 'reading is allowed');
  const editor = await signIn('eddie', 'acme-team');
  const made = await withCookie('POST', '/api/datasets', editor.cookie, {
    csrf: editor.csrf,
    body: { ...edit, dataset: 'editor-made' },
  });
  t.equal(made.status, 201, 'an editor session may');
});

t.test("another workspace's data is refused", async (t) => {
  const { cookie, csrf } = await signIn('bobby');
  const byKey = await call(server, 'GET', '/api/datasets/alice/shapes', { key: keys.bobby });
  const bySession = await withCookie('GET', '/api/datasets/alice/shapes', cookie);
  t.not(bySession.status, 200);
  t.equal(bySession.status, byKey.status);
  t.same(bySession.body, byKey.body);
  isError(t, await withCookie('GET', '/api/workspaces/acme-team/members', cookie), 403);
  const into = await withCookie('POST', '/api/datasets', cookie, {
    csrf,
    body: { dataset: 'intrude', name: 'I', owner: 'alice' },
  });
  t.equal(into.status, 403);
  isError(
    t,
    await login('bobby', PASSWORDS.bobby, { workspace: 'acme-team' }),
    403,
    /not a member of workspace acme-team/,
  );
});

t.test("GET /api/auth/session answers the cookie's session, else 401", async (t) => {
  const { cookie, body } = await signIn('alice');
  const current = await withCookie<SessionBody>('GET', '/api/auth/session', cookie);
  t.equal(current.status, 200);
  t.same(current.body, body);
  isError(t, await call(server, 'GET', '/api/auth/session'), 401);
  isError(t, await withCookie('GET', '/api/auth/session', 'A'.repeat(43)), 401);
});

t.test('logout deletes the session and clears the cookie', async (t) => {
  const { cookie } = await signIn('alice');
  const out = await withCookie('POST', '/api/auth/logout', cookie);
  t.equal(out.status, 204);
  t.match(out.headers.get('set-cookie'), /^vp_session=; HttpOnly; SameSite=Lax; Path=\/; Max-Age=0$/);
  const hash = createHash('sha256').update(cookie).digest('hex');
  t.equal((await rows('select 1 from auth_sessions where token_hash = ?', [hash])).length, 0);
  isError(t, await withCookie('GET', '/api/auth/session', cookie), 401);
  isError(t, await withCookie('GET', '/api/workspaces/alice/members', cookie), 401, /Session expired or signed out/);
});

t.test('an expired session is refused', async (t) => {
  const { cookie } = await signIn('alice');
  t.equal((await withCookie('GET', '/api/workspaces/alice/members', cookie)).status, 200);
  const hash = createHash('sha256').update(cookie).digest('hex');
  await rows(`update auth_sessions set expires_at = now() - interval '1 second' where token_hash = ?`, [hash]);
  isError(t, await withCookie('GET', '/api/workspaces/alice/members', cookie), 401, /Session expired or signed out/);
  isError(t, await withCookie('GET', '/api/auth/session', cookie), 401);
});

t.test('a membership removed ends what the session reaches at once', async (t) => {
  const { cookie } = await signIn('eddie', 'acme-team');
  t.equal((await withCookie('GET', '/api/workspaces/acme-team/members', cookie)).status, 200);
  await server.services().account.removeMember('acme-team', 'eddie');
  isError(t, await withCookie('GET', '/api/workspaces/acme-team/members', cookie), 401);
});

t.test('repeated failures lock sign-in out (the auth-failure limit): per user and per address', async (t) => {
  // eddie from four addresses: his bucket fills (AUTH_FAILURE_LIMIT=4), the fifth try is 429 even with his password.
  for (let i = 1; i <= 4; i++) isError(t, await login('eddie', 'wrong-password', { address: `10.2.0.${i}` }), 401);
  const locked = await login('eddie', 'wrong-password', { address: '10.2.0.9' });
  isError(t, locked, 429, /Too many failed sign-ins/, LIMITED);
  t.match(locked.headers.get('retry-after'), /^\d+$/);
  t.ok(Number(locked.headers.get('retry-after')) >= 1);
  isError(t, await login('eddie', PASSWORDS.eddie, { address: '10.2.0.10' }), 429, /Too many failed sign-ins/, LIMITED);
  // One address guessing at many users: its bucket fills though no user's does.
  for (let i = 1; i <= 4; i++) isError(t, await login(`guess-${i}`, 'wrong-password', { address: '10.3.0.1' }), 401);
  isError(t, await login('guess-5', 'wrong-password', { address: '10.3.0.1' }), 429, undefined, LIMITED);
  // The blocked address is refused even with the right password.
  isError(t, await login('bobby', PASSWORDS.bobby, { address: '10.3.0.1' }), 429, undefined, LIMITED);
  t.equal((await login('bobby', PASSWORDS.bobby, { address: '10.3.0.2' })).status, 200, 'other addresses are not');
  // Invalid API keys from the address count in the same bucket: four of them, then one wrong password, is over.
  for (let i = 1; i <= 4; i++) {
    const headers = { 'x-forwarded-for': '10.4.0.1' };
    isError(t, await call(server, 'GET', '/api/account/summary', { key: `ul_${'0'.repeat(39)}${i}`, headers }), 401);
  }
  isError(t, await login('bobby', 'wrong-password', { address: '10.4.0.1' }), 429, undefined, LIMITED);
  isError(t, await login('bobby', PASSWORDS.bobby, { address: '10.4.0.1' }), 429, undefined, LIMITED);
});

t.test('changing the password from a session needs the current one and ends the other sessions', async (t) => {
  const first = await signIn('bobby');
  const second = await signIn('bobby');
  const next = 'bobby-new-password';
  isError(
    t,
    await withCookie('PUT', '/api/auth/password', first.cookie, { body: { password: next } }),
    403,
    /X-CSRF-Token/,
  );
  isError(
    t,
    await withCookie('PUT', '/api/auth/password', first.cookie, { csrf: first.csrf, body: { password: next } }),
    400,
    /currentPassword/,
  );
  isError(
    t,
    await withCookie('PUT', '/api/auth/password', first.cookie, {
      csrf: first.csrf,
      body: { password: next, currentPassword: 'wrong-one' },
    }),
    403,
  );
  const changed = await withCookie('PUT', '/api/auth/password', first.cookie, {
    csrf: first.csrf,
    body: { password: next, currentPassword: PASSWORDS.bobby },
  });
  t.equal(changed.status, 204);
  t.equal((await withCookie('GET', '/api/auth/session', first.cookie)).status, 200, 'this session goes on');
  // The other one ended.
  isError(t, await withCookie('GET', '/api/auth/session', second.cookie), 401);
  isError(t, await login('bobby', PASSWORDS.bobby, { address: '10.5.0.1' }), 401);
  t.equal((await login('bobby', next, { address: '10.5.0.2' })).status, 200);
  PASSWORDS.bobby = next;
});

t.test('API keys work unchanged, and a bad key is not rescued by a cookie', async (t) => {
  const { cookie } = await signIn('alice');
  t.equal((await call(server, 'GET', '/api/workspaces/alice/members', { key: keys.alice })).status, 200);
  const bad = await call(server, 'GET', '/api/workspaces/alice/members', {
    key: `ul_${'f'.repeat(40)}`,
    headers: { cookie: `vp_session=${cookie}`, 'x-forwarded-for': '10.6.0.1' },
  });
  isError(t, bad, 401, 'Invalid API key');
});

t.test("a user's sessions share one rate-limit budget (they can open any number)", async (t) => {
  const limited = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '3' } });
  await limited.services().account.createUser('alice');
  await limited.services().sessions.setByOperator('alice', PASSWORDS.alice);
  const open = async () => {
    const response = await call(limited, 'POST', '/api/auth/login', {
      body: { username: 'alice', password: PASSWORDS.alice },
    });
    return cookieOf(response);
  };
  const [first, second] = [await open(), await open()];
  const members = (cookie: string) =>
    call(limited, 'GET', '/api/workspaces/alice/members', { headers: { cookie: `vp_session=${cookie}` } });
  for (let i = 0; i < 3; i++) t.equal((await members(first)).status, 200);
  isError(t, await members(second), 429, /Rate limit exceeded for default requests/, LIMITED);
});
