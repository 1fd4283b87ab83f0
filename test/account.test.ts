// Account endpoints: storage by kind (scoped to the key's workspace), the summary's teams, and
// membership management by admins, with the rules that keep the owner fixed.
import t from 'tap';
import { StoredObject } from '../control-plane/src/storage/stored-object.entity.ts';
import { Workspace } from '../control-plane/src/account/workspace.entity.ts';
import { expectError } from './helpers/expect.ts';
import { call, startTestServer } from './helpers/server.ts';

const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000', RATE_LIMIT_MUTATION: '100000' } });
const account = server.services().account;
for (const username of ['alice', 'bobby', 'carol']) await account.createUser(username, username.toUpperCase());
await account.createTeam('acme-team', 'alice', 'Acme');
await account.setMemberRole('acme-team', 'bobby', 'admin');
const keys = server.services().apiKeys;
const alice = (await keys.create('alice', 'a')).key;
const bobby = (await keys.create('bobby', 'b')).key;
const teamAdmin = (await keys.create('acme-team', 'bobby as admin', 'bobby')).key;
const teamOwner = (await keys.create('acme-team', 'team key')).key;

async function store(handle: string, kind: StoredObject['kind'], bytes: number, key: string) {
  const em = server.orm.em.fork();
  em.create(StoredObject, { workspace: await em.findOneOrFail(Workspace, { handle }), kind, bytes, key });
  await em.flush();
}

t.test('storage sums the recorded sizes by kind, for the key workspace only', async (t) => {
  await store('alice', 'datasetImages', 1000, 'a/1');
  await store('alice', 'datasetImages', 2500, 'a/2');
  await store('alice', 'exports', 5_000_000_000, 'a/3');
  await store('bobby', 'modelFiles', 777, 'b/1');
  const mine = await call(server, 'GET', '/api/storage', { key: alice });
  t.match(mine.body, {
    username: 'alice',
    region: 'us',
    totalBytes: 5_000_003_500,
    byKind: { datasetImages: 3500, datasetArchives: 0, modelFiles: 0, exports: 5_000_000_000 },
    usage: { storage: { current: 5_000_003_500, limit: 0, percent: 0 } },
    breakdown: {
      byCategory: { datasets: { bytes: 3500 }, models: { bytes: 0 }, exports: { bytes: 5_000_000_000, count: 1 } },
      topItems: [],
    },
  });
  const theirs = await call(server, 'GET', '/api/storage', { key: bobby });
  t.match(theirs.body, {
    region: 'us',
    totalBytes: 777,
    byKind: { datasetImages: 0, datasetArchives: 0, modelFiles: 777, exports: 0 },
    breakdown: { byCategory: { models: { bytes: 777 } } },
  });
});

t.test('the summary lists the acting user teams with their roles', async (t) => {
  const summary = await call(server, 'GET', '/api/account/summary', { key: bobby });
  t.match(summary.body, {
    username: 'bobby',
    accountType: 'personal',
    role: 'owner',
    plan: 'enterprise',
    teams: [{ handle: 'acme-team', name: 'Acme', role: 'admin' }],
  });
  const asAdmin = await call(server, 'GET', '/api/account/summary', { key: teamAdmin });
  t.match(asAdmin.body, {
    username: 'acme-team',
    accountType: 'team',
    role: 'admin',
    actingUser: { username: 'bobby' },
  });
});

t.test('the summary shows team changes at once, although the key is cached', async (t) => {
  const summary = async () =>
    (await call<{ teams: Array<Record<string, unknown>> }>(server, 'GET', '/api/account/summary', { key: bobby })).body;
  t.match(
    (await summary()).teams,
    [{ username: 'acme-team', userId: /^[0-9a-f]{24}$/, plan: 'enterprise', region: 'us' }],
    'the team entries the hosted service client reads',
  );
  const teams = async () => (await summary()).teams.map(({ handle, name, role }) => ({ handle, name, role }));
  t.same(await teams(), [{ handle: 'acme-team', name: 'Acme', role: 'admin' }]);
  await server.services().account.createTeam('bobby-team', 'bobby', 'Bobby Team');
  t.same(await teams(), [
    { handle: 'acme-team', name: 'Acme', role: 'admin' },
    { handle: 'bobby-team', name: 'Bobby Team', role: 'owner' },
  ]);
  t.equal(
    (await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key: teamOwner, body: { role: 'viewer' } }))
      .status,
    200,
  );
  t.same((await teams())[0], { handle: 'acme-team', name: 'Acme', role: 'viewer' });
  t.equal(
    (await call(server, 'PUT', '/api/workspaces/acme-team/members/bobby', { key: teamOwner, body: { role: 'admin' } }))
      .status,
    200,
  );
});

t.test('an admin adds, changes and removes members; the owner stays fixed', async (t) => {
  const path = '/api/workspaces/acme-team/members';
  t.same((await call(server, 'PUT', `${path}/carol`, { key: teamAdmin, body: { role: 'viewer' } })).body, {
    success: true,
    username: 'carol',
    role: 'viewer',
  });
  t.same((await call(server, 'PUT', `${path}/carol`, { key: teamAdmin, body: { role: 'editor' } })).body, {
    success: true,
    username: 'carol',
    role: 'editor',
  });
  const members = await call<{ members: Array<{ username: string; role: string }> }>(server, 'GET', path, {
    key: teamAdmin,
  });
  t.same(
    members.body.members.map((m) => `${m.username}:${m.role}`),
    ['alice:owner', 'bobby:admin', 'carol:editor'],
  );

  expectError(
    t,
    await call(server, 'PUT', `${path}/carol`, { key: teamAdmin, body: { role: 'owner' } }),
    400,
    /body\.role: must be one of viewer, editor, admin/,
  );
  expectError(t, await call(server, 'PUT', `${path}/alice`, { key: teamAdmin, body: { role: 'viewer' } }), 409);
  expectError(t, await call(server, 'DELETE', `${path}/alice`, { key: teamAdmin }), 409);
  expectError(t, await call(server, 'PUT', `${path}/nobody-here`, { key: teamAdmin, body: { role: 'viewer' } }), 404);
  expectError(
    t,
    await call(server, 'PUT', '/api/workspaces/alice/members/carol', { key: alice, body: { role: 'viewer' } }),
    400,
    /personal workspace/,
  );

  t.same((await call(server, 'DELETE', `${path}/carol`, { key: teamAdmin })).body, {
    success: true,
    username: 'carol',
  });
  expectError(t, await call(server, 'DELETE', `${path}/carol`, { key: teamAdmin }), 404);
  const after = await call<{ members: Array<{ username: string }> }>(server, 'GET', path, { key: teamAdmin });
  t.same(
    after.body.members.map((m) => m.username),
    ['alice', 'bobby'],
  );
});

t.test("a removed member's keys are deleted with the membership: added back, the old key stays refused", async (t) => {
  const path = '/api/workspaces/acme-team/members/carol';
  t.equal((await call(server, 'PUT', path, { key: teamOwner, body: { role: 'editor' } })).status, 200);
  const carolKey = (await server.services().apiKeys.create('acme-team', 'carol as editor', 'carol')).key;
  t.equal((await call(server, 'GET', '/api/account/summary', { key: carolKey })).status, 200);
  t.equal((await call(server, 'DELETE', path, { key: teamOwner })).status, 200);
  expectError(t, await call(server, 'GET', '/api/account/summary', { key: carolKey }), 401);
  t.notOk(
    (await server.services().apiKeys.listAll('acme-team')).some((record) => record.name === 'carol as editor'),
    'the key is gone from the list',
  );
  t.equal((await call(server, 'PUT', path, { key: teamOwner, body: { role: 'editor' } })).status, 200);
  expectError(t, await call(server, 'GET', '/api/account/summary', { key: carolKey }), 401, /Invalid API key/);
  t.equal((await call(server, 'DELETE', path, { key: teamOwner })).status, 200);
});

t.test('user lookup is public and 404s for unknown users', async (t) => {
  t.match((await call(server, 'GET', '/api/users/carol')).body, { username: 'carol', name: 'CAROL' });
  expectError(t, await call(server, 'GET', '/api/users/nobody-here'), 404);
  expectError(t, await call(server, 'GET', '/api/users/Not_A_Handle'), 400, /^path\.username: /);
});
