// The audit log (issue 38, item 4): every change made through the API, the console's sessions and vpctl, and every
// sign-in, recorded with who, where from, what and how it ended; never a secret. A real control plane, real HTTP,
// real PostgreSQL, and vpctl as the operator runs it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { LOGIN_FAILED, NAMED_ACTIONS, UNRECORDED, resourceOf } from '../control-plane/src/audit/audit-actions.ts';
import { purgeAudit } from '../control-plane/src/audit/audit-purge.ts';
import { insertAuditEntries } from '../control-plane/src/audit/audit.store.ts';
import { routes } from '../control-plane/src/routes.ts';
import { expectError } from './helpers/expect.ts';
import { runNode } from './helpers/run-node.ts';
import { call, startTestServer, type Fetched } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

interface Entry {
  id: string;
  at: string;
  workspace: string | null;
  actor: { id: string | null; username: string } | null;
  via: string | null;
  clientAddress: string | null;
  action: string;
  resource: string;
  outcome: number;
  requestId: string | null;
}
interface Page {
  entries: Entry[];
  nextCursor: string | null;
}

const PASSWORD = 'alice-correct-horse-9';
const world = await startWorld(t, { TRUST_PROXY: 'true', RATE_LIMIT_MUTATION: '1000000' });
const { server } = world;
const services = server.services();
await services.account.createUser('adam');
await services.account.setMemberRole('acme-team', 'adam', 'admin');
await services.account.createTeam('rival-team', 'bobby');
await services.account.setMemberRole('rival-team', 'eddie', 'admin');
const admin = (await services.apiKeys.create('acme-team', 'adam', 'adam')).key;
const rivalAdmin = (await services.apiKeys.create('rival-team', 'eddie', 'eddie')).key;
await services.sessions.setByOperator('alice', PASSWORD);
const users = Object.fromEntries(
  (await rows<{ id: string; username: string }>('select id, username from users')).map((u) => [u.username, u.id]),
);
const workspaceIds = Object.fromEntries(
  (await rows<{ id: string; handle: string }>('select id, handle from workspaces')).map((w) => [w.handle, w.id]),
);
/** Every secret this test sees: none may be in any entry. */
const secrets: string[] = [
  world.alice,
  world.bobby,
  world.viewer,
  world.editor,
  world.team,
  admin,
  rivalAdmin,
  PASSWORD,
];

function rows<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
  return server.orm.em.fork().getConnection().execute<T[]>(sql, params);
}

let requests = 0;
/** A request from its own client address (X-Forwarded-For, TRUST_PROXY) with its own request id. */
async function send<T = Record<string, unknown>>(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; cookie?: string; csrf?: string } = {},
): Promise<Fetched<T> & { address: string; requestId: string }> {
  requests += 1;
  const address = `10.38.4.${requests}`;
  const requestId = `audit-test-${String(requests).padStart(4, '0')}`;
  const headers: Record<string, string> = { 'x-forwarded-for': address, 'x-request-id': requestId };
  if (options.cookie) headers.cookie = `vp_session=${options.cookie}`;
  if (options.csrf) headers['x-csrf-token'] = options.csrf;
  const response = await call<T>(server, method, path, { key: options.key, body: options.body, headers });
  return { ...response, address, requestId };
}

const prefix = (key: string) => key.slice(0, 11);

async function auditPage(key: string, search = ''): Promise<Fetched<Page>> {
  return call<Page>(server, 'GET', `/api/audit${search}`, { key });
}

/** Every entry the key's workspace shows, through keyset pages of `limit`. */
async function allEntries(key: string, search = '', limit = 200): Promise<Entry[]> {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams(search);
    query.set('limit', String(limit));
    if (cursor) query.set('cursor', cursor);
    const page = await auditPage(key, `?${query.toString()}`);
    if (page.status !== 200) throw new Error(`GET /api/audit: ${page.status} ${JSON.stringify(page.body)}`);
    entries.push(...page.body.entries);
    cursor = page.body.nextCursor;
  } while (cursor);
  return entries;
}

// ---------------------------------------------------------------------------------------------------------------
// The changes: one of each kind, by different roles.

const created = await send<{ id: string }>('POST', '/api/datasets', {
  key: world.team,
  body: { dataset: 'shapes', name: 'Shapes' },
});
const edited = await send('PATCH', '/api/datasets/acme-team/shapes', {
  key: world.editor,
  body: { description: 'Circles and squares' },
});
const refused = await send('PATCH', '/api/datasets/acme-team/shapes', {
  key: world.viewer,
  body: { description: 'Nope' },
});
const roleSet = await send('PUT', '/api/workspaces/acme-team/members/bobby', { key: admin, body: { role: 'viewer' } });
const connected = await send<{ enrollmentToken: string }>('POST', '/api/hosts', {
  key: admin,
  body: { name: 'gpu-1' },
});
secrets.push(connected.body.enrollmentToken);
// Written before the answer: the entry is there the moment the client has it.
const connectRows = await rows("select 1 from audit_entries where action = 'hosts.connect'");
const enrolled = await send<{ workerKey: string }>('POST', '/api/hosts/enroll', {
  body: { token: connected.body.enrollmentToken, hostname: 'box-1' },
});
secrets.push(enrolled.body.workerKey);
const disconnected = await send('DELETE', '/api/hosts/gpu-1', { key: admin });
const trashed = await send('DELETE', '/api/datasets/acme-team/shapes', { key: world.editor });
const erased = await send('DELETE', '/api/trash', { key: admin, body: { id: created.body.id, type: 'dataset' } });

const signedIn = await send<{ session: { csrfToken: string } }>('POST', '/api/auth/login', {
  body: { username: 'alice', password: PASSWORD, workspace: 'acme-team' },
});
const cookie = /vp_session=([^;]*)/.exec(signedIn.headers.get('set-cookie') ?? '')![1]!;
const csrf = signedIn.body.session.csrfToken;
secrets.push(cookie, csrf);
const keyCreated = await send<{ keyId: string; key: string; prefix: string }>('POST', '/api/api-keys', {
  cookie,
  csrf,
  body: { name: 'ci runner' },
});
secrets.push(keyCreated.body.key);
const keyRevoked = await send('DELETE', `/api/api-keys/${keyCreated.body.keyId}`, { cookie, csrf });
const signedOut = await send('POST', '/api/auth/logout', { cookie });
const wrongPassword = await send('POST', '/api/auth/login', {
  body: { username: 'alice', password: 'not-the-password-1' },
});
secrets.push('not-the-password-1');
const unknownUser = await send('POST', '/api/auth/login', {
  body: { username: 'mallory-typed-her-password', password: 'mallory-secret-9' },
});
secrets.push('mallory-secret-9');

// Not recorded: reads, a POST that only reads, a request nobody could be held to.
await send('GET', '/api/datasets/acme-team', { key: world.team });
const readByIds = await send('POST', '/api/images/urls', { key: world.team, body: { ids: [] } });
const anonymous = await send('POST', '/api/datasets', { body: { dataset: 'nobody', name: 'Nobody' } });
const badKey = await send('POST', '/api/datasets', {
  key: `ul_${'0'.repeat(40)}`,
  body: { dataset: 'bad', name: 'Bad' },
});

t.test('the changes were answered as expected', async (t) => {
  t.equal(created.status, 201);
  t.equal(edited.status, 200);
  t.equal(refused.status, 403);
  t.equal(roleSet.status, 200);
  t.equal(connected.status, 201);
  t.equal(connectRows.length, 1, 'hosts.connect was written before its answer');
  t.equal(enrolled.status, 200);
  t.equal(disconnected.status, 200);
  t.equal(trashed.status, 200);
  t.equal(erased.status, 200);
  t.equal(signedIn.status, 200);
  t.equal(keyCreated.status, 201);
  t.equal(keyRevoked.status, 200);
  t.equal(signedOut.status, 204);
  t.equal(wrongPassword.status, 401);
  t.equal(unknownUser.status, 401);
  t.not(readByIds.status, 500);
  t.equal(anonymous.status, 401);
  t.equal(badKey.status, 401);
});

t.test("each entry's fields, as the workspace's owner reads them", async (t) => {
  const entries = await allEntries(world.team);
  const byRequest = (requestId: string) => entries.filter((entry) => entry.requestId === requestId);
  const expect = (
    name: string,
    request: { address: string; requestId: string },
    fields: Omit<Partial<Entry>, 'actor'> & { action: string; actor?: { id?: string; username: string } | null },
  ) => {
    const found = byRequest(request.requestId);
    t.equal(found.length, 1, `${name}: one entry`);
    t.match(
      found[0],
      { workspace: 'acme-team', clientAddress: request.address, requestId: request.requestId, ...fields },
      name,
    );
    t.match(found[0]?.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${name}: at`);
  };
  expect('dataset created by the team key', created, {
    actor: { id: users.alice, username: 'alice' },
    via: prefix(world.team),
    action: 'POST /api/datasets',
    resource: 'datasets',
    outcome: 201,
  });
  expect('dataset edited by the editor', edited, {
    actor: { id: users.eddie, username: 'eddie' },
    via: prefix(world.editor),
    action: 'PATCH /api/datasets/:owner/:dataset',
    resource: 'datasets/acme-team/shapes',
    outcome: 200,
  });
  expect('the viewer refused', refused, {
    actor: { id: users.vicky, username: 'vicky' },
    via: prefix(world.viewer),
    action: 'PATCH /api/datasets/:owner/:dataset',
    resource: 'datasets/acme-team/shapes',
    outcome: 403,
  });
  expect('a role set by the admin', roleSet, {
    actor: { id: users.adam, username: 'adam' },
    via: prefix(admin),
    action: 'members.set_role',
    resource: 'workspaces/acme-team/members/bobby',
    outcome: 200,
  });
  expect('a host connected', connected, {
    actor: { username: 'adam' },
    action: 'hosts.connect',
    resource: 'hosts/gpu-1',
    outcome: 201,
  });
  expect('the host enrolled with its token', enrolled, {
    actor: null,
    via: null,
    action: 'hosts.enroll',
    resource: 'hosts/gpu-1',
    outcome: 200,
  });
  expect('the host disconnected', disconnected, {
    actor: { username: 'adam' },
    action: 'hosts.disconnect',
    resource: 'hosts/gpu-1',
    outcome: 200,
  });
  expect('the dataset trashed', trashed, {
    actor: { username: 'eddie' },
    action: 'DELETE /api/datasets/:owner/:dataset',
    resource: 'datasets/acme-team/shapes',
  });
  expect('the trash item erased', erased, {
    actor: { username: 'adam' },
    action: 'trash.erase',
    resource: `trash/dataset/${created.body.id}`,
    outcome: 200,
  });
  expect('the password sign-in', signedIn, {
    actor: { id: users.alice, username: 'alice' },
    via: 'session',
    action: 'auth.login',
    resource: 'users/alice',
    outcome: 200,
  });
  expect('a key created from the console', keyCreated, {
    actor: { username: 'alice' },
    via: 'session',
    action: 'keys.create',
    resource: `api-keys/${keyCreated.body.keyId}`,
    outcome: 201,
  });
  expect('the key revoked from the console', keyRevoked, {
    actor: { username: 'alice' },
    via: 'session',
    action: 'keys.revoke',
    resource: `api-keys/${keyCreated.body.keyId}`,
    outcome: 200,
  });
  expect('the sign-out', signedOut, { actor: { username: 'alice' }, via: 'session', action: 'auth.logout' });

  t.same(
    entries.filter((entry) => !entry.action.includes('.') && !/^(POST|PUT|PATCH|DELETE) /.test(entry.action)),
    [],
    'every action is a named one or METHOD /route',
  );
  t.notOk(
    entries.some((entry) => entry.action.startsWith('GET ')),
    'reads are not recorded',
  );
  t.same(byRequest(readByIds.requestId), [], 'a POST that only reads is not recorded');
  const raw = await rows<{ request_id: string }>('select request_id from audit_entries');
  const recordedIds = new Set(raw.map((row) => row.request_id));
  t.notOk(recordedIds.has(anonymous.requestId), 'no key: not recorded');
  t.notOk(recordedIds.has(badKey.requestId), 'an invalid key: not recorded');
  t.same(
    entries.map((entry) => entry.id),
    [...entries].sort((a, b) => b.at.localeCompare(a.at) || Number(b.id) - Number(a.id)).map((entry) => entry.id),
    'newest first',
  );
});

t.test('failed sign-ins: a known user in their personal workspace, an unknown one as the appliance’s', async (t) => {
  const alices = await allEntries(world.alice, `?action=${LOGIN_FAILED}`);
  t.equal(alices.length, 1);
  t.match(alices[0], {
    workspace: 'alice',
    actor: { id: users.alice, username: 'alice' },
    via: null,
    action: LOGIN_FAILED,
    resource: 'users/alice',
    outcome: 401,
    clientAddress: wrongPassword.address,
    requestId: wrongPassword.requestId,
  });
  const [unknown] = await rows<Record<string, unknown>>('select * from audit_entries where request_id = ?', [
    unknownUser.requestId,
  ]);
  t.match(unknown, {
    workspace_id: null,
    actor_id: null,
    actor_name: null,
    action: LOGIN_FAILED,
    resource: 'auth/login',
    outcome: 401,
    client_address: unknownUser.address,
  });
  t.notOk(JSON.stringify(unknown).includes('mallory'), 'the username of nobody (maybe a password) is not kept');
});

t.test('who may read it: owners and admins of the workspace, that workspace only', async (t) => {
  const asAdmin = await allEntries(admin);
  const asOwner = await allEntries(world.team);
  t.same(
    asAdmin.map((entry) => entry.id),
    asOwner.map((entry) => entry.id),
    "the admin sees what the owner sees (the workspace's log)",
  );
  t.ok(asOwner.every((entry) => entry.workspace === 'acme-team'));
  expectError(t, await auditPage(world.viewer), 403);
  expectError(t, await auditPage(world.editor), 403);
  expectError(t, await call(server, 'GET', '/api/audit'), 401);
  const rival = await allEntries(rivalAdmin);
  t.same(rival, [], "another workspace's admin sees none of them");
  const bobby = await allEntries(world.bobby);
  t.notOk(
    bobby.some((entry) => asOwner.some((other) => other.id === entry.id)),
    "another workspace's owner sees none of them",
  );
});

t.test('keyset pages return every entry once, in order', async (t) => {
  const whole = await allEntries(world.team);
  t.ok(whole.length >= 13, `${whole.length} entries`);
  for (const limit of [1, 2, 5]) {
    const paged = await allEntries(world.team, '', limit);
    t.same(
      paged.map((entry) => entry.id),
      whole.map((entry) => entry.id),
      `pages of ${limit}`,
    );
  }
  expectError(t, await auditPage(world.team, '?cursor=nonsense'), 400, /cursor/);
  expectError(t, await auditPage(world.team, '?limit=201'), 400);
});

t.test('filters: actor, action, resource, time range', async (t) => {
  const whole = await allEntries(world.team);
  const eddie = await allEntries(world.team, '?actor=eddie');
  t.ok(eddie.length >= 2);
  t.ok(eddie.every((entry) => entry.actor?.username === 'eddie'));
  t.equal(eddie.length, whole.filter((entry) => entry.actor?.username === 'eddie').length);

  const keys = await allEntries(world.team, '?action=keys.create');
  t.same(
    keys.map((entry) => entry.requestId),
    [keyCreated.requestId],
  );
  const patches = await allEntries(world.team, `?action=${encodeURIComponent('PATCH /api/datasets/:owner/:dataset')}`);
  t.same(
    patches.map((entry) => entry.outcome).sort((a, b) => a - b),
    [200, 403],
  );

  const dataset = await allEntries(world.team, '?resource=datasets/acme-team/shapes');
  t.same(
    dataset.map((entry) => entry.requestId ?? '').sort((a, b) => a.localeCompare(b)),
    [edited.requestId, refused.requestId, trashed.requestId].sort((a, b) => a.localeCompare(b)),
  );
  t.same(await allEntries(world.team, '?resource=datasets/acme-team/sha'), [], 'a resource is matched whole');
  t.equal((await allEntries(world.team, '?resource=datasets/acme-team')).length, 3, 'and what is below it');
  t.equal((await allEntries(world.team, '?resource=hosts')).length, 3, 'hosts/gpu-1: connect, enroll, disconnect');

  const sorted = [...whole].sort((a, b) => a.at.localeCompare(b.at));
  const middle = sorted[Math.floor(sorted.length / 2)]!;
  const from = await allEntries(world.team, `?from=${middle.at}`);
  const to = await allEntries(world.team, `?to=${middle.at}`);
  t.ok(
    from.every((entry) => entry.at >= middle.at),
    'from: at or after',
  );
  t.ok(
    to.every((entry) => entry.at < middle.at),
    'to: before',
  );
  t.equal(from.length + to.length, whole.length, 'from and to split the log');
  t.same(
    await allEntries(world.team, `?from=${middle.at}&actor=eddie`),
    eddie.filter((entry) => entry.at >= middle.at),
    'filters combine',
  );
  expectError(t, await auditPage(world.team, '?from=yesterday'), 400, /from/);
  expectError(t, await auditPage(world.team, '?from=0000-01-01T00:00:00Z'), 400, /from/);
  expectError(t, await auditPage(world.team, '?cursor=0000-01-01T00:00:00.000Z_5'), 400, /cursor/);
  expectError(t, await auditPage(world.team, `?from=${middle.at}&to=${middle.at}`), 400, /to/);
});

t.test('vpctl: its changes are recorded as vpctl, and audit export prints JSON lines', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vp-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const vpctl = (...args: string[]) =>
    runNode(['installer/src/vpctl.ts', ...args], {
      DATABASE_URL: server.databaseUrl,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
    });
  const key = await vpctl('keys', 'create', '--workspace', 'acme-team', '--name', 'ops');
  t.equal(key.code, 0, key.stderr);
  secrets.push(key.stdout.trim());
  t.equal((await vpctl('members', 'add', 'acme-team', 'bobby', '--role', 'editor')).code, 0);
  t.equal((await vpctl('hosts', 'connect', 'gpu-9', '--workspace', 'acme-team')).code, 0);
  t.equal((await vpctl('hosts', 'disconnect', 'gpu-9')).code, 0);
  t.equal((await vpctl('keys', 'revoke', prefix(key.stdout.trim()))).code, 0);
  const refusedByCli = await vpctl('members', 'remove', 'acme-team', 'nobody-at-all');
  t.equal(refusedByCli.code, 1);

  const operator = await allEntries(world.team, '?actor=vpctl');
  t.same(operator.map((entry) => [entry.action, entry.resource, entry.outcome]).reverse(), [
    ['keys.create', operator.at(-1)!.resource, 200],
    ['members.set_role', 'workspaces/acme-team/members/bobby', 200],
    ['hosts.connect', 'hosts/gpu-9', 200],
    ['hosts.disconnect', 'hosts/gpu-9', 200],
    ['keys.revoke', operator.at(-1)!.resource, 200],
    ['members.remove', 'workspaces/acme-team/members/nobody-at-all', 404],
  ]);
  t.match(operator.at(-1)!.resource, /^api-keys\/[0-9a-f]{24}$/);
  t.ok(
    operator.every(
      (entry) =>
        entry.actor?.username === 'vpctl' &&
        entry.actor.id === null &&
        entry.via === 'vpctl' &&
        entry.clientAddress === null &&
        entry.workspace === 'acme-team',
    ),
  );

  const exported = await vpctl('audit', 'export', '--workspace', 'acme-team');
  t.equal(exported.code, 0, exported.stderr);
  const lines = exported.stdout.trimEnd().split('\n');
  const parsed = lines.map((line) => JSON.parse(line) as Entry);
  const listed = await allEntries(world.team);
  t.same(
    parsed.map((entry) => entry.id),
    listed.map((entry) => entry.id).reverse(),
    'the workspace’s entries, oldest first',
  );
  t.same(parsed.at(-1), listed[0], 'each line is an entry as the API shows it');
  t.match(exported.stderr, `Exported ${lines.length} audit entries`);

  const everything = await vpctl('audit', 'export');
  t.equal(everything.code, 0);
  const all = everything.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Entry);
  t.equal(all.length, Number((await rows<{ n: string }>('select count(*) as n from audit_entries'))[0]!.n));
  t.ok(
    all.some((entry) => entry.workspace === null && entry.action === LOGIN_FAILED),
    "the appliance's own entries too",
  );
  t.ok(all.some((entry) => entry.workspace === 'alice'));

  const future = await vpctl('audit', 'export', '--since', '2999-01-01T00:00:00Z');
  t.match(future, { code: 0, stdout: '' });
  const since = await vpctl('audit', 'export', '--since', parsed[3]!.at);
  t.ok(
    since.stdout
      .trimEnd()
      .split('\n')
      .every((line) => (JSON.parse(line) as Entry).at >= parsed[3]!.at),
  );
  t.match(await vpctl('audit', 'export', '--since', 'last week'), { code: 1, stderr: /--since/ });
  t.match(await vpctl('audit', 'export', '--workspace', 'no-such-team'), { code: 1, stderr: /no-such-team/ });
});

t.test('no secret in any entry: keys, tokens, passwords, cookies (the raw table scanned)', async (t) => {
  const dump = (await rows<{ row: string }>('select row_to_json(e)::text as row from audit_entries e'))
    .map((row) => row.row)
    .join('\n');
  t.ok(dump.length > 1000, 'the table has entries');
  for (const secret of secrets) t.notOk(dump.includes(secret), `${secret.slice(0, 6)}… is in no entry`);
  t.notMatch(dump, /ul_[0-9a-f]{40}|vpe_[0-9a-f]{32}|vpw_[0-9a-f]{48}/, 'nothing shaped like a key or token');
  t.notMatch(dump, /Bearer|password|"name":|Circles and squares/i, 'no header, no body');
});

t.test('a clean shutdown writes what is queued', async (t) => {
  const second = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { RATE_LIMIT_DEFAULT: '1000000' },
  });
  const response = await call(second, 'POST', '/api/projects', {
    key: world.team,
    body: { project: 'late-change', name: 'Late change' },
    headers: { 'x-request-id': 'audit-test-shutdown' },
  });
  t.equal(response.status, 201, JSON.stringify(response.body));
  await second.close();
  const [entry] = await rows<{ action: string }>('select action from audit_entries where request_id = ?', [
    'audit-test-shutdown',
  ]);
  t.equal(entry?.action, 'POST /api/projects');
});

t.test('the purge removes only entries older than the retention', async (t) => {
  const now = new Date();
  const day = 86_400_000;
  const entry = (daysAgo: number, resource: string) => ({
    at: new Date(now.getTime() - daysAgo * day),
    workspaceId: workspaceIds['acme-team']!,
    actorId: null,
    actorName: 'vpctl',
    via: 'vpctl',
    clientAddress: null,
    action: 'purge.test',
    resource,
    outcome: 200,
    requestId: null,
  });
  await insertAuditEntries(server.orm.em.fork(), [
    entry(401, 'old/1'),
    entry(400.01, 'old/2'),
    entry(399.99, 'kept/1'),
    entry(10, 'kept/2'),
  ]);
  const before = Number((await rows<{ n: string }>('select count(*) as n from audit_entries'))[0]!.n);
  t.equal(await purgeAudit(server.orm.em.fork(), 400, now), 2);
  const left = await rows<{ resource: string }>(
    "select resource from audit_entries where action = 'purge.test' order by resource",
  );
  t.same(
    left.map((row) => row.resource),
    ['kept/1', 'kept/2'],
  );
  t.equal(Number((await rows<{ n: string }>('select count(*) as n from audit_entries'))[0]!.n), before - 2);
  t.equal(await purgeAudit(server.orm.em.fork(), 400, now), 0, 'nothing more');
});

t.test('the vocabulary names routes that exist', async (t) => {
  const templates = new Set(routes.map((route) => `${route.method} ${route.path}`));
  for (const template of [...Object.keys(NAMED_ACTIONS), ...Object.keys(UNRECORDED)])
    t.ok(templates.has(template), `${template} is a route`);
  for (const template of Object.keys(UNRECORDED)) t.notOk(template in NAMED_ACTIONS, `${template}: one or the other`);
  t.equal(resourceOf('/api/datasets', {}), 'datasets');
  t.equal(resourceOf('/api/training/start', {}), 'training/start');
  t.equal(
    resourceOf('/api/datasets/:owner/:dataset/classes/merge', { owner: 'alice', dataset: 'shapes' }),
    'datasets/alice/shapes',
  );
  t.equal(resourceOf('/api/hosts/:name/rotate', { name: 'a/b' }), 'hosts/a%2Fb');
});
