// The Agents API (saved workflows): save, list, read, delete, graph checks, optimistic concurrency and the owner parameter.
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { expectError } from './helpers/expect.ts';
import { call, type TestServer } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

interface Saved {
  id: string;
  version: number;
  errors: Array<{ id: string; label: string; message: string }>;
  region: string;
}
interface Entry {
  id: string;
  username: string;
  name: string;
  version: number;
  createdAt: string;
  updatedAt: string;
}
interface Listed {
  workflows: Array<Entry & { graph?: { nodes: unknown[]; edges: unknown[]; templateId: string } }>;
  total: number;
  region: string;
}

/** A block as the ultralytics clients draw them: node type agent, the block type in data.type. */
const node = (id: string, type = 'LLM', label = id) => ({
  id,
  type: 'agent',
  position: { x: 0, y: 0 },
  data: { label, type, config: {} },
});
const edge = (source: string, target: string, id = `${source}-${target}`) => ({ id, source, target });
/** Dataset → LLM → Output: a graph with no problems. */
const pipeline = () => ({
  nodes: [node('in', 'Dataset'), node('think'), node('out', 'Output')],
  edges: [edge('in', 'think'), edge('think', 'out')],
});

/** GET /api/workflows?id=: the one agent, with its graph, listed alone. */
async function readOne(server: TestServer, key: string, id: string) {
  const read = await call<Listed>(server, 'GET', `/api/workflows?id=${id}`, { key });
  if (read.status !== 200) throw new Error(`read agent: ${read.status} ${JSON.stringify(read.body)}`);
  if (read.body.workflows.length !== 1) throw new Error(`read agent: not one agent: ${JSON.stringify(read.body)}`);
  return read.body.workflows[0]!;
}

function save(server: TestServer, key: string, body: Record<string, unknown>, owner?: string) {
  return call<Saved>(server, 'PUT', `/api/workflows${owner ? `?owner=${owner}` : ''}`, { key, body });
}

async function create(server: TestServer, key: string, name: string, owner?: string): Promise<string> {
  const response = await save(server, key, { name, graph: pipeline(), version: 0 }, owner);
  if (response.status !== 200) throw new Error(`save agent: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.id;
}

t.test('create, list, read, update, delete', async (t) => {
  const { server, alice } = await startWorld(t);
  const graph = { ...pipeline(), templateId: 'tpl-1' };
  const created = await save(server, alice, { name: '  Support bot ', graph, version: 0 });
  t.equal(created.status, 200);
  t.match(created.body, { id: /^[0-9a-f]{24}$/, version: 1, errors: [], region: 'us' });
  const id = created.body.id;

  const listed = await call<Listed>(server, 'GET', '/api/workflows', { key: alice });
  t.equal(listed.status, 200);
  t.same(
    listed.body.workflows.map((w) => [w.id, w.username, w.name, w.version]),
    [[id, 'alice', 'Support bot', 1]],
  );
  t.same(
    Object.keys(listed.body.workflows[0]).sort(),
    ['createdAt', 'id', 'name', 'updatedAt', 'username', 'version'],
    'list entries carry no graph',
  );
  t.equal(listed.body.total, 1);
  t.equal(listed.body.region, 'us');

  const read = await readOne(server, alice, id);
  t.match(read, { id, username: 'alice', name: 'Support bot', version: 1 });
  t.same(read.graph, graph, 'the graph comes back as saved');

  const renamed = await save(server, alice, {
    id,
    name: 'Helpdesk bot',
    graph: { nodes: [node('solo', 'Image')], edges: [] },
    version: 1,
  });
  t.equal(renamed.status, 200);
  t.same(renamed.body, { id, version: 2, errors: [], region: 'us' });
  const reread = await readOne(server, alice, id);
  t.match(reread, { name: 'Helpdesk bot', version: 2 });
  t.equal(reread.graph!.nodes.length, 1);
  t.equal(reread.graph!.templateId, '', 'an update replaces the whole graph: one saved without templateId reads ""');
  t.ok(reread.updatedAt > read.updatedAt, 'updatedAt moves on save');

  const deleted = await call(server, 'DELETE', `/api/workflows?id=${id}`, { key: alice });
  t.equal(deleted.status, 200);
  t.same(deleted.body, { success: true, id });
  expectError(t, await call(server, 'GET', `/api/workflows?id=${id}`, { key: alice }), 404, `Agent ${id} not found`);
  expectError(t, await call(server, 'DELETE', `/api/workflows?id=${id}`, { key: alice }), 404);
  expectError(t, await save(server, alice, { id, name: 'x', graph: pipeline(), version: 2 }), 404);
  expectError(t, await call(server, 'DELETE', '/api/workflows', { key: alice }), 400, /id/);
  t.same((await call<Listed>(server, 'GET', '/api/workflows', { key: alice })).body.workflows, [], 'deleted for good');
  expectError(t, await call(server, 'GET', '/api/workflows'), 401);
});

t.test('search, ordering by updatedAt and the 100 cap', async (t) => {
  const { server, alice } = await startWorld(t);
  // Pauses keep updatedAt (millisecond precision) strictly increasing between saves.
  const first = await create(server, alice, 'Invoice reader');
  await sleep(5);
  const second = await create(server, alice, 'Shelf counter');
  await sleep(5);
  const third = await create(server, alice, 'invoice_checker 100%');
  await sleep(5);
  t.equal(
    (await save(server, alice, { id: first, name: 'Invoice reader', graph: pipeline(), version: 1 })).status,
    200,
  );
  const order = await call<Listed>(server, 'GET', '/api/workflows', { key: alice });
  t.same(
    order.body.workflows.map((w) => w.id),
    [first, third, second],
    'most recently updated first',
  );

  const search = async (text: string) =>
    (await call<Listed>(server, 'GET', `/api/workflows?search=${encodeURIComponent(text)}`, { key: alice })).body;
  t.same(
    (await search('INVOICE')).workflows.map((w) => w.id),
    [first, third],
    'name substring, case ignored',
  );
  t.same(
    (await search('_checker 100%')).workflows.map((w) => w.id),
    [third],
    'LIKE wildcards match literally',
  );
  t.same(
    (await search('%')).workflows.map((w) => w.id),
    [third],
  );
  t.equal((await search('nothing')).total, 0);
  expectError(t, await call(server, 'GET', `/api/workflows?search=${'x'.repeat(201)}`, { key: alice }), 400, /search/);

  for (let batch = 0; batch < 98; batch += 14) {
    await Promise.all(Array.from({ length: 14 }, (_, i) => create(server, alice, `Bulk ${batch + i}`)));
    await sleep(5);
  }
  const capped = await call<Listed>(server, 'GET', '/api/workflows', { key: alice });
  t.equal(capped.body.workflows.length, 100);
  t.equal(capped.body.total, 101);
  const times = capped.body.workflows.map((w) => w.updatedAt);
  t.same(times, [...times].sort().reverse(), 'sorted by updatedAt, newest first');
  t.notOk(
    capped.body.workflows.some((w) => w.id === second),
    'the least recently updated agent is the one left out',
  );
});

t.test('optimistic concurrency', async (t) => {
  const { server, alice } = await startWorld(t);
  const id = await create(server, alice, 'Racer');
  expectError(
    t,
    await save(server, alice, { id, name: 'Racer', graph: pipeline(), version: 2 }),
    409,
    /is at version 1, not 2/,
  );

  let version = 1;
  for (let round = 0; round < 5; round++) {
    const saves = await Promise.all(
      ['left', 'right'].map((name) => save(server, alice, { id, name, graph: pipeline(), version })),
    );
    t.same(
      saves.map((s) => s.status).sort((a, b) => a - b),
      [200, 409],
      `round ${round}: exactly one of two same-version saves wins`,
    );
    const winner = saves.find((s) => s.status === 200)!;
    const loser = saves.find((s) => s.status === 409)!;
    t.equal(winner.body.version, version + 1);
    expectError(t, loser, 409, new RegExp(`is at version ${version + 1}, not ${version}`));
    version = winner.body.version;
  }
  t.equal((await readOne(server, alice, id)).version, 6, 'each round added exactly one version');
  expectError(
    t,
    await save(server, alice, { id, name: 'Old', graph: pipeline(), version: 1 }),
    409,
    /is at version 6, not 1/,
  );
});

t.test('graphs that cannot run are refused', async (t) => {
  const { server, alice } = await startWorld(t);
  const refused = async (graph: unknown, message: RegExp) =>
    expectError(t, await save(server, alice, { name: 'Bad', graph, version: 0 }), 400, message);
  const nodes = [node('a', 'Dataset'), node('b'), node('c')];

  await refused({ nodes, edges: [edge('a', 'b'), edge('b', 'c'), edge('c', 'b')] }, /more than one input/);
  await refused({ nodes, edges: [edge('b', 'c'), edge('c', 'b')] }, /cycle/);
  await refused({ nodes, edges: [edge('b', 'b')] }, /cycle through block "b"/);
  await refused({ nodes, edges: [edge('a', 'c'), edge('b', 'c')] }, /block "c" has more than one input/);
  await refused({ nodes, edges: [edge('a', 'ghost')] }, /edge "a-ghost" refers to node "ghost"/);
  await refused({ nodes, edges: [edge('ghost', 'a')] }, /refers to node "ghost"/);
  await refused({ nodes: [...nodes, node('a')], edges: [] }, /duplicate node id "a"/);
  await refused({ nodes, edges: [edge('a', 'b', 'e'), edge('b', 'c', 'e')] }, /duplicate edge id "e"/);

  const many = Array.from({ length: 501 }, (_, i) => node(`n${i}`));
  await refused({ nodes: many, edges: [] }, /graph\.nodes/);
  await refused(
    { nodes: many.slice(0, 2), edges: Array.from({ length: 2001 }, (_, i) => edge('n0', 'n1', `e${i}`)) },
    /graph\.edges/,
  );
  const big = { ...node('big'), data: { label: 'big', type: 'llm', config: { prompt: 'x'.repeat(500_000) } } };
  await refused({ nodes: [big], edges: [] }, /graph: is longer than 500000 characters serialized/);
  await refused({ nodes: [{ id: 'a', type: 'llm', data: { label: 'a', type: 'llm' } }], edges: [] }, /position/);
  await refused(undefined, /graph/);

  const ok = pipeline();
  expectError(t, await save(server, alice, { name: 'x'.repeat(129), graph: ok, version: 0 }), 400, /name/);
  expectError(t, await save(server, alice, { name: '   ', graph: ok, version: 0 }), 400, /name/);
  expectError(t, await save(server, alice, { name: 'x', graph: ok, version: 1 }), 400, /id: required to update/);
  expectError(
    t,
    await save(server, alice, { id: 'a'.repeat(24), name: 'x', graph: ok, version: 0 }),
    400,
    /version 0 creates/,
  );
  expectError(t, await save(server, alice, { name: 'x', graph: ok, version: -1 }), 400, /version/);
  expectError(t, await save(server, alice, { name: 'x', graph: ok, version: 1.5 }), 400, /version/);

  // The limits themselves are allowed.
  const edges = Array.from({ length: 499 }, (_, i) => edge(`n${i}`, `n${i + 1}`));
  t.equal(
    (await save(server, alice, { name: 'Long chain', graph: { nodes: many.slice(0, 500), edges }, version: 0 })).status,
    200,
  );
  t.same(
    (await call<Listed>(server, 'GET', '/api/workflows', { key: alice })).body.workflows.map((w) => w.name),
    ['Long chain'],
    'refused graphs saved nothing',
  );
});

t.test('problems the canvas would flag are returned and the agent is saved', async (t) => {
  const { server, alice } = await startWorld(t);
  const graph = {
    nodes: [
      node('in', 'Dataset'),
      node('think', 'LLM', ' '),
      node('out', 'Output'),
      node('lonely'),
      node('start', 'Image'),
    ],
    edges: [edge('in', 'think'), edge('think', 'out'), edge('out', 'start')],
  };
  const saved = await save(server, alice, { name: 'Rough draft', graph, version: 0 });
  t.equal(saved.status, 200);
  t.same(saved.body.errors, [
    { id: 'think', label: ' ', message: 'Block has no label' },
    { id: 'lonely', label: 'lonely', message: 'Block is not connected to any other block' },
    { id: 'start', label: 'start', message: 'An Image block starts a chain and takes no input' },
    { id: 'out', label: 'out', message: 'Output ends a chain: no block can follow it' },
  ]);
  t.same((await readOne(server, alice, saved.body.id)).graph, { ...graph, templateId: '' }, 'saved regardless');

  const noInput = await save(server, alice, {
    id: saved.body.id,
    name: 'Rough draft',
    graph: { nodes: [node('alone')], edges: [] },
    version: 1,
  });
  t.same(noInput.body, {
    id: saved.body.id,
    version: 2,
    errors: [{ id: 'alone', label: 'alone', message: 'Block has no input' }],
    region: 'us',
  });
  // Dataset and Image blocks start chains; an Export stands alone.
  const starts = {
    nodes: [node('pictures', 'Image'), node('seen', 'Output'), node('export', 'Export')],
    edges: [edge('pictures', 'seen')],
  };
  t.same(
    (await save(server, alice, { name: 'Starts', graph: starts, version: 0 })).body.errors,
    [],
    'the client block types start and end chains',
  );
  t.same((await save(server, alice, { name: 'Empty', graph: { nodes: [], edges: [] }, version: 0 })).body.errors, [
    { id: '', label: '', message: 'The agent has no blocks' },
  ]);
});

t.test('owner: team roles, other workspaces', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby, viewer, editor, team } = world;
  const keys = server.services().apiKeys;
  const vickyPersonal = (await keys.create('vicky', 'p')).key;
  const eddiePersonal = (await keys.create('eddie', 'p')).key;

  // alice owns acme-team: her personal key reaches it through owner.
  const teamAgent = await create(server, alice, 'Team agent', 'acme-team');
  const aliceAgent = await create(server, alice, 'Private agent');
  const teamList = await call<Listed>(server, 'GET', '/api/workflows?owner=acme-team', { key: alice });
  t.same(
    teamList.body.workflows.map((w) => [w.id, w.username]),
    [[teamAgent, 'acme-team']],
  );
  t.same(
    (await call<Listed>(server, 'GET', '/api/workflows', { key: alice })).body.workflows.map((w) => w.id),
    [aliceAgent],
    'owner defaults to the key workspace',
  );

  // A team key reaches its team by default; by id, an agent is found in its own workspace.
  for (const key of [viewer, team, editor]) {
    t.same(
      (await call<Listed>(server, 'GET', '/api/workflows', { key })).body.workflows.map((w) => w.id),
      [teamAgent],
    );
  }
  t.equal(
    (await call(server, 'GET', `/api/workflows?id=${teamAgent}`, { key: alice })).status,
    200,
    'by id, a team agent needs no owner',
  );
  // An owner other than the agent's workspace is 404.
  expectError(
    t,
    await call(server, 'GET', `/api/workflows?id=${teamAgent}&owner=alice`, { key: alice }),
    404,
    `Agent ${teamAgent} not found`,
  );

  // The team's viewer can read but not save or delete, with a team key or with owner from a personal key.
  for (const [key, owner] of [
    [viewer, undefined],
    [vickyPersonal, 'acme-team'],
  ] as const) {
    const query = owner ? `&owner=${owner}` : '';
    t.same(
      (
        await call<Listed>(server, 'GET', `/api/workflows${owner ? `?owner=${owner}` : ''}`, { key })
      ).body.workflows.map((w) => w.id),
      [teamAgent],
    );
    t.equal((await call(server, 'GET', `/api/workflows?id=${teamAgent}${query}`, { key })).status, 200);
    expectError(
      t,
      await save(server, key, { name: 'Nope', graph: pipeline(), version: 0 }, owner),
      403,
      'Permission denied for this operation',
    );
    expectError(t, await save(server, key, { id: teamAgent, name: 'Nope', graph: pipeline(), version: 1 }, owner), 403);
    expectError(t, await call(server, 'DELETE', `/api/workflows?id=${teamAgent}${query}`, { key }), 403);
  }

  // The team's editor saves with a team key or with owner from a personal key.
  const edited = await save(
    server,
    eddiePersonal,
    { id: teamAgent, name: 'Edited by eddie', graph: pipeline(), version: 1 },
    'acme-team',
  );
  t.same(edited.body, { id: teamAgent, version: 2, errors: [], region: 'us' });
  t.equal(
    (await save(server, editor, { id: teamAgent, name: 'Edited again', graph: pipeline(), version: 2 })).status,
    200,
  );
  t.equal(
    (await save(server, eddiePersonal, { name: 'Eddie in team', graph: pipeline(), version: 0 }, 'acme-team')).status,
    200,
  );

  // No role in the workspace: 404, never 403.
  expectError(
    t,
    await call(server, 'GET', '/api/workflows?owner=acme-team', { key: bobby }),
    404,
    'Workspace "acme-team" not found',
  );
  expectError(t, await call(server, 'GET', '/api/workflows?owner=alice', { key: bobby }), 404);
  expectError(t, await call(server, 'GET', '/api/workflows?owner=no-such-team', { key: alice }), 404);
  expectError(t, await save(server, bobby, { name: 'Intruder', graph: pipeline(), version: 0 }, 'alice'), 404);
  for (const id of [teamAgent, aliceAgent]) {
    expectError(t, await call(server, 'GET', `/api/workflows?id=${id}`, { key: bobby }), 404, `Agent ${id} not found`);
    expectError(t, await save(server, bobby, { id, name: 'Intruder', graph: pipeline(), version: 1 }), 404);
    expectError(t, await call(server, 'DELETE', `/api/workflows?id=${id}`, { key: bobby }), 404);
  }
  // A team key acts in its team only: not in the personal workspace of its acting user.
  expectError(t, await call(server, 'GET', '/api/workflows?owner=alice', { key: team }), 404);
  expectError(t, await call(server, 'GET', `/api/workflows?id=${aliceAgent}`, { key: team }), 404);
  expectError(t, await call(server, 'GET', '/api/workflows?owner=eddie', { key: editor }), 404);
  t.same(
    (await call<Listed>(server, 'GET', '/api/workflows', { key: bobby })).body.workflows,
    [],
    "a stranger's own list is empty",
  );

  // The team editor deletes the team agent.
  t.equal((await call(server, 'DELETE', `/api/workflows?id=${teamAgent}`, { key: editor })).status, 200);
  t.same(
    (await call<Listed>(server, 'GET', '/api/workflows?owner=acme-team', { key: alice })).body.workflows.map(
      (w) => w.name,
    ),
    ['Eddie in team'],
  );
});
