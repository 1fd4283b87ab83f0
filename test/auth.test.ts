// The spec's Authentication section, end to end: real server, real HTTP, real PostgreSQL.
import t from 'tap';
import { Authenticator } from '../control-plane/src/auth/authenticator.ts';
import { generateApiKey, hashApiKey } from '../control-plane/src/auth/key-format.ts';
import { expectError as isError } from './helpers/expect.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';

const INVALID = 'Invalid API key';
const DENIED = 'Permission denied for this operation';
const OWNER_ONLY = 'Workspace owner access required';

type Tap = typeof t;

interface World {
  server: TestServer;
  keys: { alice: string; bobby: string; team: string; viewer: string; editor: string; admin: string };
}

/**
 * alice owns her personal workspace and team `acme-team` (vicky viewer, eddie editor, adam admin);
 * bobby is a stranger with a personal workspace. Limits are raised: this file is not about them.
 */
async function arrange(t: Tap): Promise<World> {
  const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000' } });
  const account = server.services().account;
  for (const username of ['alice', 'bobby', 'vicky', 'eddie', 'adam'])
    await account.createUser(username, `${username[0].toUpperCase()}${username.slice(1)}`);
  await account.createTeam('acme-team', 'alice', 'Acme Vision');
  await account.setMemberRole('acme-team', 'vicky', 'viewer');
  await account.setMemberRole('acme-team', 'eddie', 'editor');
  await account.setMemberRole('acme-team', 'adam', 'admin');
  const keys = server.services().apiKeys;
  return {
    server,
    keys: {
      alice: (await keys.create('alice', 'alice laptop')).key,
      bobby: (await keys.create('bobby', 'bobby laptop')).key,
      team: (await keys.create('acme-team', 'team ci')).key,
      viewer: (await keys.create('acme-team', 'vicky key', 'vicky')).key,
      editor: (await keys.create('acme-team', 'eddie key', 'eddie')).key,
      admin: (await keys.create('acme-team', 'adam key', 'adam')).key,
    },
  };
}

const { server, keys } = await arrange(t);

t.test('a missing key is 401 on every key-only route', async (t) => {
  for (const [method, path] of [
    ['GET', '/api/account/summary'],
    ['GET', '/api/storage'],
    ['GET', '/api/api-keys'],
    ['GET', '/api/workspaces/acme-team/members'],
    ['PUT', '/api/workspaces/acme-team/members/bobby'],
    ['DELETE', '/api/workspaces/acme-team/members/vicky'],
  ]) {
    const response = await call(server, method, path, method === 'PUT' ? { body: { role: 'viewer' } } : {});
    t.equal(response.status, 401, `${method} ${path}`);
    t.same(Object.keys(response.body), ['error']);
    t.match(response.body.error, /API key/);
  }
  // Nothing changed on the way: the unauthenticated PUT and DELETE were refused before acting.
  const members = await call<{ members: Array<{ username: string; role: string }> }>(
    server,
    'GET',
    '/api/workspaces/acme-team/members',
    { key: keys.team },
  );
  t.same(
    members.body.members.map((m) => `${m.username}:${m.role}`),
    ['adam:admin', 'alice:owner', 'eddie:editor', 'vicky:viewer'],
  );
});

t.test('a malformed Authorization header or key is 401 Invalid API key', async (t) => {
  const unknownButWellFormed = `ul_${'0123456789abcdef'.repeat(3).slice(0, 40)}`;
  const headers = [
    ['not bearer', `Basic ${Buffer.from('alice:secret').toString('base64')}`],
    ['bearer without key', 'Bearer'],
    ['raw key, no scheme', keys.alice],
    ['too short', `Bearer ${keys.alice.slice(0, 42)}`],
    ['too long', `Bearer ${keys.alice}0`],
    ['upper-case hex', `Bearer ul_${keys.alice.slice(3).toUpperCase()}`],
    ['wrong prefix', `Bearer uk_${keys.alice.slice(3)}`],
    ['non-hex', `Bearer ul_${'g'.repeat(40)}`],
    ['two tokens', `Bearer ${keys.alice} ${keys.bobby}`],
    ['well-formed but unknown', `Bearer ${unknownButWellFormed}`],
  ];
  for (const [label, authorization] of headers) {
    const response = await call(server, 'GET', '/api/account/summary', { headers: { authorization } });
    t.equal(response.status, 401, label);
    t.same(response.body, { error: INVALID }, label);
  }
  // On a route that allows anonymous callers a bad key is still refused, not quietly treated as anonymous.
  const optional = await call(server, 'GET', '/api/users/alice', { key: unknownButWellFormed });
  isError(t, optional, 401, INVALID);
  // The scheme is case-insensitive (RFC 7235) and the real key still works.
  const ok = await call(server, 'GET', '/api/account/summary', { headers: { authorization: `bearer ${keys.alice}` } });
  t.equal(ok.status, 200);
});

/**
 * Requests until the key is refused. A change is announced with NOTIFY when it commits, and each
 * replica drops its key cache when the announcement arrives, a millisecond or so later; the cache
 * itself keeps a key for 60 s, so a refusal well inside REFUSAL_BOUND_MS is the invalidation at work.
 */
const REFUSAL_BOUND_MS = 500;
async function firstRefusal(instance: { url: string }, key: string, path = '/api/account/summary') {
  const started = performance.now();
  for (let accepted = 0; ; accepted++) {
    const response = await call(instance, 'GET', path, { key });
    const elapsedMs = Math.round(performance.now() - started);
    if (response.status !== 200 || elapsedMs > REFUSAL_BOUND_MS) return { response, elapsedMs, accepted };
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

t.test('a revoked key is refused at once on every replica, although it was just used and cached', async (t) => {
  const second = await startTestServer(t, { databaseUrl: server.databaseUrl, env: { RATE_LIMIT_DEFAULT: '100000' } });
  const services = server.services();
  const { key, record } = await services.apiKeys.create('alice', 'to be revoked');
  const { key: witness } = await services.apiKeys.create('alice', 'cache witness');
  for (const instance of [server, second, server, second]) {
    t.equal((await call(instance, 'GET', '/api/account/summary', { key })).status, 200);
    t.equal((await call(instance, 'GET', '/api/account/summary', { key: witness })).status, 200);
  }
  // The witness's row disappears behind the API's back (no announcement) and it is still served
  // from the cache: what follows has to beat the cache, not just a database lookup.
  await server.orm.em.getConnection().execute('delete from api_keys where key_hash = ?', [hashApiKey(witness)]);
  t.equal((await call(server, 'GET', '/api/account/summary', { key: witness })).status, 200, 'cached on instance 1');
  t.equal((await call(second, 'GET', '/api/account/summary', { key: witness })).status, 200, 'cached on instance 2');

  const revoked = await services.apiKeys.revoke(record.prefix);
  t.equal(revoked.prefix, record.prefix);
  for (const [label, instance] of [
    ['instance 2', second],
    ['instance 1', server],
  ] as const) {
    const { response, elapsedMs, accepted } = await firstRefusal(instance, key);
    isError(t, response, 401, INVALID);
    t.ok(
      elapsedMs <= REFUSAL_BOUND_MS,
      `${label} refused the revoked key ${elapsedMs} ms after revoke() returned (${accepted} accepted before)`,
    );
  }
  // Both replicas dropped their whole cache on the announcement, the witness with it.
  isError(t, await call(server, 'GET', '/api/account/summary', { key: witness }), 401, INVALID);
  isError(t, await call(second, 'GET', '/api/account/summary', { key: witness }), 401, INVALID);
  // Permanent: the record is gone, and other keys of the workspace are untouched.
  t.notOk((await server.services().apiKeys.listAll('alice')).some((k) => k.prefix === record.prefix));
  t.equal((await call(second, 'GET', '/api/account/summary', { key: keys.alice })).status, 200);
  t.equal((await call(second, 'GET', '/api/account/summary', { key })).status, 401, 'and stays refused');
});

t.test('a key lookup that straddles an invalidation does not refill the cache', async (t) => {
  // Unit level: the race is too narrow to provoke over HTTP. The lookup reads the key before the
  // revocation commits and returns after the announcement has cleared the cache.
  let lookups = 0;
  let release: () => void = () => undefined;
  const row = {
    id: 'k1',
    prefix: 'ul_00000000',
    workspace_id: 'w1',
    handle: 'alice',
    kind: 'personal',
    user_id: 'u1',
    username: 'alice',
    role: 'owner',
    workspace_name: 'Alice',
    region: 'us',
    workspace_created_at: new Date(),
    user_name: 'Alice',
    teams: [],
  };
  const em = {
    getConnection: () => ({
      execute: async (sql: string) => {
        if (sql.startsWith('update')) return [];
        lookups++;
        if (lookups === 1) await new Promise<void>((resolve) => (release = resolve));
        return [row];
      },
    }),
  };
  const announce: Array<() => void> = [];
  const notifications = {
    on: (_channel: string, handler: (payload: string) => void) => announce.push(() => handler('')),
    onReconnect: () => undefined,
  };
  const authenticator = new Authenticator(em as never, { warn: () => undefined } as never);
  authenticator.listen(notifications as never);
  const key = generateApiKey();

  const inFlight = authenticator.authenticate(key);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(lookups, 1, 'the lookup is under way');
  for (const handler of announce) handler();
  release();
  t.equal((await inFlight).keyId, 'k1', 'the request already under way is answered');
  await authenticator.authenticate(key);
  t.equal(lookups, 2, 'the next request looks the key up again instead of trusting the stale result');
  await authenticator.authenticate(key);
  t.equal(lookups, 2, 'and a lookup made after the invalidation is cached as usual');
});

t.test('a key reaches only its own workspace', async (t) => {
  isError(t, await call(server, 'GET', '/api/workspaces/acme-team/members', { key: keys.bobby }), 403, DENIED);
  isError(t, await call(server, 'GET', '/api/workspaces/alice/members', { key: keys.bobby }), 403, DENIED);
  // alice owns acme-team, but her personal key is not a key of acme-team.
  isError(t, await call(server, 'GET', '/api/workspaces/acme-team/members', { key: keys.alice }), 403, DENIED);
  isError(
    t,
    await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key: keys.alice, body: { role: 'viewer' } }),
    403,
    DENIED,
  );
  // and a team key does not reach the owner's personal workspace.
  isError(t, await call(server, 'GET', '/api/workspaces/alice/members', { key: keys.team }), 403, DENIED);
  const own = await call(server, 'GET', '/api/workspaces/bobby/members', { key: keys.bobby });
  t.equal(own.status, 200);
  t.same(own.body, {
    workspace: 'bobby',
    members: [
      {
        username: 'bobby',
        name: 'Bobby',
        role: 'owner',
        since: own.body.members && (own.body.members as Array<{ since: string }>)[0].since,
      },
    ],
    total: 1,
  });
  isError(t, await call(server, 'GET', '/api/workspaces/nobody-here/members', { key: keys.bobby }), 404);
});

t.test('each role of a team workspace', async (t) => {
  const roleKeys = { viewer: keys.viewer, editor: keys.editor, admin: keys.admin };
  for (const [role, key] of Object.entries(roleKeys)) {
    const summary = await call(server, 'GET', '/api/account/summary', { key });
    t.equal(summary.status, 200, `${role}: summary`);
    t.match(summary.body, { username: 'acme-team', accountType: 'team', role }, `${role}: acts with its own role`);

    const members = await call<{ members: Array<{ username: string }>; total: number }>(
      server,
      'GET',
      '/api/workspaces/acme-team/members',
      { key },
    );
    t.equal(members.status, 200, `${role} can list members`);
    t.equal(members.body.total, 4);

    isError(t, await call(server, 'GET', '/api/api-keys', { key }), 403, OWNER_ONLY);
  }

  for (const [role, key] of Object.entries({ viewer: keys.viewer, editor: keys.editor })) {
    isError(
      t,
      await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key, body: { role: 'viewer' } }),
      403,
      DENIED,
    );
    isError(
      t,
      await call(server, 'PUT', '/api/workspaces/acme-team/members/vicky', { key, body: { role: 'admin' } }),
      403,
      DENIED,
    );
    isError(t, await call(server, 'DELETE', '/api/workspaces/acme-team/members/vicky', { key }), 403, DENIED);
    t.pass(`${role} cannot change members`);
  }
  const before = await call<{ members: Array<{ username: string; role: string }> }>(
    server,
    'GET',
    '/api/workspaces/acme-team/members',
    { key: keys.viewer },
  );
  t.same(
    before.body.members.map((m) => `${m.username}:${m.role}`),
    ['adam:admin', 'alice:owner', 'eddie:editor', 'vicky:viewer'],
    'the refused changes did not happen',
  );

  const added = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key: keys.admin,
    body: { role: 'viewer' },
  });
  t.equal(added.status, 200);
  t.same(added.body, { success: true, username: 'bobby', role: 'viewer' });
  const promoted = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key: keys.admin,
    body: { role: 'editor' },
  });
  t.same(promoted.body, { success: true, username: 'bobby', role: 'editor' });
  const after = await call<{ members: Array<{ username: string; role: string }> }>(
    server,
    'GET',
    '/api/workspaces/acme-team/members',
    { key: keys.editor },
  );
  t.ok(
    after.body.members.some((m) => m.username === 'bobby' && m.role === 'editor'),
    'the admin change is visible to others',
  );
  // The owner's role never changes through the API, not even by an admin.
  isError(
    t,
    await call(server, 'PUT', '/api/workspaces/acme-team/members/alice', { key: keys.admin, body: { role: 'viewer' } }),
    409,
  );
  const removed = await call(server, 'DELETE', '/api/workspaces/acme-team/members/bobby', { key: keys.admin });
  t.same(removed.body, { success: true, username: 'bobby' });
  // bobby's own personal key never gained access to acme-team through membership.
  isError(t, await call(server, 'GET', '/api/workspaces/acme-team/members', { key: keys.bobby }), 403, DENIED);
});

t.test('the owner lists the workspace keys; the list never holds a key or its hash', async (t) => {
  const summary = await call(server, 'GET', '/api/account/summary', { key: keys.team });
  t.equal(summary.status, 200);
  const { key: unused } = await server.services().apiKeys.create('acme-team', 'never used');
  const list = await call<{
    keys: Array<{
      keyId: string;
      keyPrefix: string;
      prefix: string;
      name: string;
      createdAt: string;
      lastUsedAt: string | null;
    }>;
    total: number;
  }>(server, 'GET', '/api/api-keys', { key: keys.team });
  t.equal(list.status, 200);
  const teamKeys = [keys.team, keys.viewer, keys.editor, keys.admin, unused];
  t.same(
    list.body.keys.map((k) => [k.prefix, k.name]),
    [
      [keys.team.slice(0, 11), 'team ci'],
      [keys.viewer.slice(0, 11), 'vicky key'],
      [keys.editor.slice(0, 11), 'eddie key'],
      [keys.admin.slice(0, 11), 'adam key'],
      [unused.slice(0, 11), 'never used'],
    ],
    'exactly the keys of acme-team, oldest first',
  );
  t.equal(list.body.total, 5);
  for (const item of list.body.keys) {
    t.same(Object.keys(item).sort(), ['createdAt', 'keyId', 'keyPrefix', 'lastUsedAt', 'name', 'prefix']);
    t.equal(item.keyPrefix, item.prefix, 'keyPrefix: the display prefix, as the hosted service names it');
    t.match(item.keyId, /^[0-9a-f]{24}$/, 'keyId: the record id, not the key');
    t.ok(!Number.isNaN(Date.parse(item.createdAt)));
  }
  t.equal(list.body.keys[4].lastUsedAt, null, 'an unused key has no last use');
  t.type(list.body.keys[0].lastUsedAt, 'string', 'the calling key has been used');
  const text = JSON.stringify(list.body);
  for (const key of [...teamKeys, keys.alice]) {
    t.notOk(text.includes(key.slice(3)), 'no key in the list');
    t.notOk(text.includes(hashApiKey(key)), 'no key hash in the list');
  }
  t.notOk(text.includes(keys.alice.slice(0, 11)), "alice's personal key is not a key of acme-team");

  const personal = await call<{ keys: Array<{ prefix: string }> }>(server, 'GET', '/api/api-keys', { key: keys.bobby });
  t.same(
    personal.body.keys.map((k) => k.prefix),
    [keys.bobby.slice(0, 11)],
    'a personal owner sees only their own keys',
  );
});

t.test('a team key acts as the team owner', async (t) => {
  const summary = await call(server, 'GET', '/api/account/summary', { key: keys.team });
  t.equal(summary.status, 200);
  t.match(summary.body, {
    username: 'acme-team',
    name: 'Acme Vision',
    accountType: 'team',
    plan: 'enterprise',
    region: 'us',
    role: 'owner',
    actingUser: { username: 'alice', name: 'Alice' },
  });
  // With full owner permissions there: it may manage members.
  const added = await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', {
    key: keys.team,
    body: { role: 'viewer' },
  });
  t.equal(added.status, 200);
  t.equal((await call(server, 'DELETE', '/api/workspaces/acme-team/members/bobby', { key: keys.team })).status, 200);
});

t.test('a personal key authenticates as the personal account', async (t) => {
  const summary = await call<Record<string, unknown>>(server, 'GET', '/api/account/summary', { key: keys.alice });
  t.equal(summary.status, 200);
  t.same(Object.keys(summary.body).sort(), [
    'accountType',
    'actingUser',
    'counts',
    'createdAt',
    'creditsCents',
    'name',
    'plan',
    'region',
    'role',
    'teams',
    'username',
  ]);
  t.match(summary.body, {
    username: 'alice',
    name: 'Alice',
    accountType: 'personal',
    role: 'owner',
    actingUser: { username: 'alice', name: 'Alice' },
    counts: { projects: 0, datasets: 0, models: 0 },
  });
  t.match(summary.body.teams, [
    { handle: 'acme-team', username: 'acme-team', name: 'Acme Vision', role: 'owner', plan: 'enterprise' },
  ]);
  const vicky = await call(server, 'GET', '/api/account/summary', { key: keys.viewer });
  t.same(vicky.body.actingUser, { username: 'vicky', name: 'Vicky' });
  t.match(vicky.body.teams, [{ handle: 'acme-team', name: 'Acme Vision', role: 'viewer' }]);
});

t.test('anonymous callers reach public content only', async (t) => {
  const profile = await call(server, 'GET', '/api/users/alice');
  t.equal(profile.status, 200);
  t.same(Object.keys(profile.body).sort(), ['createdAt', 'name', 'username']);
  t.match(profile.body, { username: 'alice', name: 'Alice' });
  const withKey = await call(server, 'GET', '/api/users/alice', { key: keys.bobby });
  t.same(withKey.body, profile.body, 'a key is accepted there too');
  isError(t, await call(server, 'GET', '/api/users/nobody-here'), 404);
  isError(t, await call(server, 'GET', '/api/workspaces/alice/members'), 401);
  isError(t, await call(server, 'GET', '/api/workspaces/acme-team/members'), 401);
  isError(t, await call(server, 'GET', '/api/account/summary'), 401);
});

t.test('removing a member stops the keys issued for that member', async (t) => {
  const services = server.services();
  await services.account.createUser('mona');
  await services.account.setMemberRole('acme-team', 'mona', 'editor');
  const { key } = await services.apiKeys.create('acme-team', 'mona key', 'mona');
  const { key: personal } = await services.apiKeys.create('mona', 'mona personal');
  t.equal(
    (await call(server, 'GET', '/api/workspaces/acme-team/members', { key })).status,
    200,
    'works while a member',
  );
  t.equal((await call(server, 'GET', '/api/account/summary', { key })).status, 200);

  const removed = await call(server, 'DELETE', '/api/workspaces/acme-team/members/mona', { key: keys.admin });
  t.equal(removed.status, 200);
  const { response, elapsedMs, accepted } = await firstRefusal(server, key, '/api/workspaces/acme-team/members');
  isError(t, response, 401, INVALID);
  t.ok(elapsedMs <= REFUSAL_BOUND_MS, `refused ${elapsedMs} ms after the removal (${accepted} accepted before)`);
  isError(t, await call(server, 'GET', '/api/account/summary', { key }), 401, INVALID);
  t.equal(
    (await call(server, 'GET', '/api/account/summary', { key: personal })).status,
    200,
    "the member's personal key still works",
  );

  // A role change also reaches cached keys at once: adam, demoted to viewer, loses admin rights.
  t.equal((await call(server, 'GET', '/api/workspaces/acme-team/members', { key: keys.admin })).status, 200);
  await server.services().account.setMemberRole('acme-team', 'adam', 'viewer');
  const started = performance.now();
  let summary = await call(server, 'GET', '/api/account/summary', { key: keys.admin });
  while (summary.body.role === 'admin' && performance.now() - started < REFUSAL_BOUND_MS) {
    summary = await call(server, 'GET', '/api/account/summary', { key: keys.admin });
  }
  t.equal(
    summary.body.role,
    'viewer',
    `the demotion reached the cached key within ${Math.round(performance.now() - started)} ms`,
  );
  isError(
    t,
    await call(server, 'PUT', '/api/workspaces/acme-team/members/mona', { key: keys.admin, body: { role: 'viewer' } }),
    403,
    DENIED,
  );
  await server.services().account.setMemberRole('acme-team', 'adam', 'admin');
});

t.test('API keys cannot create or revoke API keys', async (t) => {
  const before = (await server.services().apiKeys.listAll()).map((k) => k.prefix).sort();
  const target = (await server.services().apiKeys.listAll('acme-team')).find(
    (k) => k.prefix === keys.viewer.slice(0, 11),
  )!;
  for (const key of [keys.team, keys.alice]) {
    const create = await call(server, 'POST', '/api/api-keys', { key, body: { name: 'sneaky' } });
    isError(t, create, 403, /^API keys cannot create or revoke API keys: sign in to the console/);
    const revoke = await call(server, 'DELETE', `/api/api-keys/${target.id}`, { key });
    isError(t, revoke, 403, /^API keys cannot create or revoke API keys/);
    const withoutId = await call(server, 'DELETE', '/api/api-keys', { key, body: { prefix: target.prefix } });
    isError(t, withoutId, 405);
    t.notMatch(withoutId.headers.get('allow'), /DELETE/);
  }
  const after = (await server.services().apiKeys.listAll()).map((k) => k.prefix).sort();
  t.same(after, before, 'no key was created or removed');
  t.equal(
    (await call(server, 'GET', '/api/account/summary', { key: keys.viewer })).status,
    200,
    'the targeted key still works',
  );
});
