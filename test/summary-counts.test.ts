// The account summary's counts and credit as clients see them with two replicas on one database: exact on the
// replica that made a change as soon as it answered, on the other one once PostgreSQL delivered the change's
// notification, through create, clone, trash (a project with its models), restore and permanent deletion, and
// for changes made outside either replica's API (an operator's credit grant).
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { createModel, createProject } from './helpers/models.ts';
import { call, startTestServer, type TestServer } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Figures {
  counts: { datasets: number; projects: number; models: number };
  creditsCents: number;
}

const world = await startWorld(t, { RATE_LIMIT_MUTATION: '1000000' });
const a = world.server;
const b = await startTestServer(t, {
  databaseUrl: a.databaseUrl,
  env: { RATE_LIMIT_DEFAULT: '1000000', RATE_LIMIT_MUTATION: '1000000' },
});
const key = world.alice;

async function figures(server: TestServer, as = key): Promise<Figures> {
  const { status, body } = await call<Figures>(server, 'GET', '/api/account/summary', { key: as });
  if (status !== 200) throw new Error(`summary answered ${status}`);
  return { counts: body.counts, creditsCents: body.creditsCents };
}

/** The replica that answered the change: exact on the very next request. */
async function exactOn(server: TestServer, expected: Figures, what: string): Promise<void> {
  t.same(await figures(server), expected, `${what}: exact at once on the replica that made it`);
}

/** Another replica: exact once the change's notification arrived (one round of polling, no clock in the assertion). */
async function settlesOn(server: TestServer, expected: Figures, what: string): Promise<void> {
  let seen = await figures(server);
  for (let tries = 0; tries < 500 && !isDeepStrictEqual(seen, expected); tries++) {
    await sleep(10);
    seen = await figures(server);
  }
  t.same(seen, expected, `${what}: the other replica shows it too`);
}

async function both(changedOn: TestServer, other: TestServer, expected: Figures, what: string): Promise<void> {
  await exactOn(changedOn, expected, what);
  await settlesOn(other, expected, what);
}

const counts = (datasets: number, projects: number, models: number, creditsCents = 0): Figures => ({
  counts: { datasets, projects, models },
  creditsCents,
});

async function trash(server: TestServer, path: string): Promise<void> {
  const response = await call(server, 'DELETE', path, { key });
  if (response.status !== 200) throw new Error(`DELETE ${path}: ${response.status} ${JSON.stringify(response.body)}`);
}

async function fromTrash(server: TestServer, method: 'POST' | 'DELETE', id: string, type: string): Promise<void> {
  const response = await call(server, method, '/api/trash', { key, body: { id, type } });
  if (response.status !== 200)
    throw new Error(`${method} /api/trash: ${response.status} ${JSON.stringify(response.body)}`);
}

t.test('counts follow every change on both replicas, while both keep answering from their caches', async (t) => {
  // Both replicas have read (and may keep) the empty figures before anything changes.
  await exactOn(a, counts(0, 0, 0), 'to start with');
  await exactOn(b, counts(0, 0, 0), 'to start with');

  const datasetId = await createDataset(world, key, { dataset: 'cars', name: 'Cars' });
  await both(a, b, counts(1, 0, 0), 'dataset created');
  t.equal(
    (await call(b, 'POST', '/api/datasets/alice/cars/clone', { key, body: {} })).status,
    201,
    'cloned on the other replica',
  );
  await both(b, a, counts(2, 0, 0), 'dataset cloned');

  const projectId = await createProject(world, key, { project: 'detector', name: 'Detector' });
  await both(a, b, counts(2, 1, 0), 'project created');
  const first = await createModel(world, key, { project: 'detector', model: 'first' });
  await createModel({ ...world, server: b }, key, { project: 'detector', model: 'second' });
  await both(b, a, counts(2, 1, 2), 'models created on both replicas');

  await trash(a, '/api/datasets/alice/cars');
  await both(a, b, counts(1, 1, 2), 'dataset trashed');
  await trash(b, '/api/projects/alice/detector');
  await both(b, a, counts(1, 0, 0), 'project trashed with its models');
  await fromTrash(a, 'POST', projectId, 'project');
  await both(a, b, counts(1, 1, 2), 'project restored with its models');

  await trash(b, '/api/models/alice/detector/first');
  await both(b, a, counts(1, 1, 1), 'model trashed on its own');
  await fromTrash(a, 'DELETE', first.id, 'model');
  await both(a, b, counts(1, 1, 1), 'a model erased from trash was not counted any more');
  await fromTrash(b, 'POST', datasetId, 'dataset');
  await both(b, a, counts(2, 1, 1), 'dataset restored');

  await trash(a, '/api/projects/alice/detector');
  await fromTrash(a, 'DELETE', projectId, 'project');
  await both(a, b, counts(2, 0, 0), 'project erased with its model');
  await trash(b, '/api/datasets/alice/cars');
  await fromTrash(b, 'DELETE', datasetId, 'dataset');
  await both(b, a, counts(1, 0, 0), 'dataset erased');

  // Outside both replicas' APIs (vpctl credits grant works like this): both learn of it from PostgreSQL.
  await a.services().billing.grant('alice', 1250);
  await settlesOn(a, counts(1, 0, 0, 1250), 'credit granted by the operator');
  await settlesOn(b, counts(1, 0, 0, 1250), 'credit granted by the operator');

  t.same(await figures(a, world.bobby), counts(0, 0, 0), "another workspace's counts are its own");
  t.same(await figures(b, world.team), counts(0, 0, 0), "another workspace's counts are its own");
});
