// The hourly sweep of recorded files nothing refers to: replaced weights go once no model (clones
// included) uses them; files still referred to, and young ones, stay.
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { sweepOrphanFiles } from '../control-plane/src/storage/orphan-files.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

t.test('replaced weights are deleted by the sweep once no model refers to them', async (t) => {
  const world = await startWorld(t, { RATE_LIMIT_DOWNLOAD: '1000000' });
  const services = world.server.services();
  await createProject(world, world.alice, { project: 'cars', name: 'Cars' });
  const first = await createModel(world, world.alice, { project: 'cars', model: 'first', name: 'First' });
  const second = await createModel(world, world.alice, { project: 'cars', model: 'second', name: 'Second' });
  await uploadWeights(world, world.alice, first.id, Buffer.from('weights one'));
  await uploadWeights(world, world.alice, second.id, Buffer.from('weights two'));
  const clone = await call(world.server, 'POST', '/api/models/alice/cars/second/clone', {
    key: world.alice,
    body: { project: 'cars', model: 'second-copy' },
  });
  t.equal(clone.status, 201);
  // New weights for both originals: the first's old file is now unused, the second's is the clone's.
  await uploadWeights(world, world.alice, first.id, Buffer.from('weights one, again'));
  await uploadWeights(world, world.alice, second.id, Buffer.from('weights two, again'));
  const keys = async () => {
    const found: string[] = [];
    for await (const entry of world.server.storage.store.list('ws/')) found.push(entry.key);
    return found.sort();
  };
  t.equal((await keys()).length, 4, 'replaced weights stay until the sweep');
  t.equal(await sweepOrphanFiles(services.em, services.storage), 0, 'young files are left alone');
  await query(services.em, `update stored_objects set updated_at = now() - interval '2 days'`);
  t.equal(
    await sweepOrphanFiles(services.em, services.storage),
    1,
    "one file is unused: the first model's old weights",
  );
  t.equal((await keys()).length, 3);
  for (const model of ['first', 'second', 'second-copy']) {
    const files = await call<{ files: Array<{ downloadUrl: string }> }>(
      world.server,
      'GET',
      `/api/models/alice/cars/${model}/files`,
      { key: world.alice },
    );
    t.equal((await fetch(files.body.files[0].downloadUrl)).status, 200, `${model}: its weights are still served`);
  }
  const storage = await call<{ byKind: { modelFiles: number } }>(world.server, 'GET', '/api/storage', {
    key: world.alice,
  });
  t.equal(
    storage.body.byKind.modelFiles,
    'weights one, again'.length + 'weights two'.length + 'weights two, again'.length,
    'storage counts what is left',
  );
});
