// Trash: list, restore and permanent deletion over real HTTP and PostgreSQL, the files that go with it, and
// the 30-day purge with a fake clock, also with two runners at once. Projects and models are put into
// trash by setting their columns, as their DELETE routes do.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { Project } from '../control-plane/src/projects/project.entity.ts';
import { purgeExpired } from '../control-plane/src/trash/trash-purge.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call, type TestServer } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const DAY = 86_400_000;
const daysFromNow = (days: number) => new Date(Date.now() + days * DAY);

interface TrashItem {
  id: string;
  type: string;
  slug: string;
  owner: string;
  project?: string;
  modelCount?: number;
  deletedAt: string;
  daysRemaining: number;
}
interface TrashPage {
  items: TrashItem[];
  total: number;
  page: number;
  limit: number;
  totalPages: number;
  summary: {
    projects: number;
    datasets: number;
    models: number;
    total: number;
    totalItems: number;
    byType: Record<string, { count: number }>;
  };
  resources?: Array<{ id: string; type: string; name: string; slug: string; trashedWithProject?: boolean }>;
  region: string;
}

const sql = <T = Record<string, unknown>>(server: TestServer, text: string, params: unknown[] = []) =>
  query<T>(server.services().em, text, params);

async function workspaceOf(server: TestServer, handle: string): Promise<string> {
  const [row] = await sql<{ id: string }>(server, 'select id from workspaces where handle = ?', [handle]);
  return row.id;
}

/** A blob in the store and its stored_objects row, as an upload or an export leaves them. */
async function putBlob(
  server: TestServer,
  workspaceId: string,
  key: string,
  kind: 'modelFiles' | 'datasetArchives',
  bytes = Buffer.from(`blob ${key}`),
): Promise<string> {
  await server.storage.store.put(key, Readable.from([bytes]), {
    contentType: 'application/octet-stream',
    expectedBytes: bytes.length,
  });
  await sql(
    server,
    `insert into stored_objects (id, created_at, updated_at, workspace_id, kind, key, bytes) values (substr(md5(random()::text), 1, 24), now(), now(), ?, ?, ?, ?)`,
    [workspaceId, kind, key, bytes.length],
  );
  return key;
}

/** A project with models; each model gets its own weights unless `fileKeys` names one to share (a clone). */
async function addProject(
  server: TestServer,
  handle: string,
  slug: string,
  models: string[],
  fileKeys: Record<string, string> = {},
): Promise<{ id: string; models: Record<string, string>; keys: Record<string, string> }> {
  const em = server.services().em;
  const workspace = await workspaceOf(server, handle);
  const project = em.create(Project, { workspace, slug, name: slug });
  const created: Record<string, Model> = {};
  for (const name of models)
    created[name] = em.create(Model, { workspace, project, slug: name, name, fileKey: fileKeys[name] ?? null });
  await em.flush();
  const keys: Record<string, string> = {};
  for (const [name, model] of Object.entries(created)) {
    keys[name] =
      fileKeys[name] ??
      (await putBlob(server, workspace, `ws/${workspace}/models/${model.id}/uploads/s1/${name}.pt`, 'modelFiles'));
    await sql(server, 'update models set file_key = ? where id = ?', [keys[name], model.id]);
  }
  return {
    id: project.id,
    models: Object.fromEntries(Object.entries(created).map(([name, model]) => [name, model.id])),
    keys,
  };
}

/** What project DELETE does: the project and its models still active go to trash together. */
async function trashProject(server: TestServer, projectId: string, at = new Date()): Promise<void> {
  await sql(server, 'update projects set deleted_at = ? where id = ?', [at, projectId]);
  await sql(
    server,
    'update models set deleted_at = ?, trashed_with_project = true where project_id = ? and deleted_at is null',
    [at, projectId],
  );
}

/** What model DELETE does. */
async function trashModel(server: TestServer, modelId: string, at = new Date()): Promise<void> {
  await sql(server, 'update models set deleted_at = ?, trashed_with_project = false where id = ?', [at, modelId]);
}

async function trashDataset(world: World, key: string, owner: string, slug: string, at?: Date): Promise<void> {
  const deleted = await call(world.server, 'DELETE', `/api/datasets/${owner}/${slug}`, { key });
  if (deleted.status !== 200) throw new Error(`delete dataset: ${deleted.status}`);
  if (at)
    await sql(
      world.server,
      'update datasets set deleted_at = ? where slug = ? and workspace_id = (select id from workspaces where handle = ?)',
      [at, slug, owner],
    );
}

async function blobKeys(server: TestServer, prefix = 'ws/'): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of server.storage.store.list(prefix)) keys.push(entry.key);
  return keys.sort();
}

const listTrash = (world: World, key: string, search = '') =>
  call<TrashPage>(world.server, 'GET', `/api/trash${search}`, { key });
const restore = (world: World, key: string, body: unknown) =>
  call<{ success: boolean; restoredModels?: number }>(world.server, 'POST', '/api/trash', { key, body });
const erase = (world: World, key: string, body: unknown) =>
  call<{ success: true; deletedCount: number; cascadedModels: number; survivingDeployments: number }>(
    world.server,
    'DELETE',
    '/api/trash',
    { key, body },
  );

t.test('list: newest first, summary, type filter, pages, preview, workspaces', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  for (const slug of ['old-set', 'mid-set', 'new-set'])
    await createDataset(world, alice, { dataset: slug, name: slug });
  await trashDataset(world, alice, 'alice', 'old-set', daysFromNow(-10.5));
  await trashDataset(world, alice, 'alice', 'mid-set', daysFromNow(-2));
  await trashDataset(world, alice, 'alice', 'new-set');
  const gone = await addProject(server, 'alice', 'gone', ['m1', 'm2']);
  await trashProject(server, gone.id, daysFromNow(-1));
  const kept = await addProject(server, 'alice', 'kept', ['lonely', 'active']);
  await trashModel(server, kept.models.lonely, daysFromNow(-3));

  const all = await listTrash(world, alice);
  t.equal(all.status, 200);
  t.same(
    all.body.items.map((item) => `${item.type}:${item.slug}`),
    ['dataset:new-set', 'project:gone', 'dataset:mid-set', 'model:lonely', 'dataset:old-set'],
  );
  t.match(
    all.body.summary,
    {
      projects: 1,
      datasets: 3,
      models: 1,
      total: 5,
      totalItems: 5,
      byType: { projects: { count: 1 }, datasets: { count: 3 }, models: { count: 1 } },
    },
    'models trashed with their project are counted under it',
  );
  t.match(all.body, { total: 5, page: 1, limit: 50, totalPages: 1, region: 'us' });
  const bySlug = Object.fromEntries(all.body.items.map((item) => [item.slug, item]));
  t.match(bySlug['new-set'], { owner: 'alice', daysRemaining: 30 });
  t.equal(bySlug['old-set'].daysRemaining, 20, '10.5 days in: 19.5 left, rounded up');
  t.match(bySlug.gone, { modelCount: 2, daysRemaining: 29 });
  t.equal(bySlug.lonely.project, 'kept');
  t.notOk('modelCount' in bySlug['new-set']);

  const second = await listTrash(world, alice, '?limit=2&page=2');
  t.same(
    second.body.items.map((item) => item.slug),
    ['mid-set', 'lonely'],
  );
  t.match(second.body, { total: 5, page: 2, limit: 2, totalPages: 3 });
  t.same((await listTrash(world, alice, '?limit=2&page=9')).body.items, [], 'past the last page: empty');
  const datasets = await listTrash(world, alice, '?type=dataset');
  t.same(
    datasets.body.items.map((item) => item.slug),
    ['new-set', 'mid-set', 'old-set'],
  );
  t.match(datasets.body, { total: 3, summary: { total: 5 } });
  t.same(
    (await listTrash(world, alice, '?type=model')).body.items.map((item) => item.slug),
    ['lonely'],
  );

  const preview = await listTrash(world, alice, `?type=project&id=${gone.id}`);
  t.same(
    preview.body.items.map((item) => item.slug),
    ['gone'],
  );
  t.same(preview.body.resources, [
    { id: gone.id, type: 'project', name: 'gone', slug: 'gone' },
    { id: gone.models.m1, type: 'model', name: 'm1', slug: 'm1', trashedWithProject: true },
    { id: gone.models.m2, type: 'model', name: 'm2', slug: 'm2', trashedWithProject: true },
  ]);
  t.match((await listTrash(world, alice, `?type=model&id=${kept.models.lonely}`)).body.resources, [
    { type: 'model', slug: 'lonely', trashedWithProject: false },
  ]);
  expectError(t, await listTrash(world, alice, `?type=model&id=${gone.models.m1}`), 404, /listed/);
  expectError(t, await listTrash(world, alice, `?type=model&id=${kept.models.active}`), 404);
  expectError(
    t,
    await listTrash(world, alice, `?type=dataset&id=${gone.id}`),
    400,
    /query\.id: needs type project or model/,
  );
  expectError(t, await listTrash(world, alice, `?id=${gone.id}`), 400);
  expectError(t, await listTrash(world, alice, '?limit=201'), 400, /limit/);
  expectError(t, await listTrash(world, alice, '?page=0'), 400, /page/);
  expectError(t, await listTrash(world, alice, '?type=image'), 400, /type/);
  expectError(t, await call(server, 'GET', '/api/trash'), 401);

  // Only the key's workspace: other workspaces, the team included, see none of alice's trash.
  await createDataset(world, world.editor, { dataset: 'team-set', name: 'T', owner: 'acme-team' });
  await trashDataset(world, world.editor, 'acme-team', 'team-set');
  const team = await listTrash(world, world.viewer);
  t.same(
    team.body.items.map((item) => `${item.owner}/${item.slug}`),
    ['acme-team/team-set'],
    'a viewer reads the team trash',
  );
  t.match((await listTrash(world, world.bobby)).body.summary, {
    projects: 0,
    datasets: 0,
    models: 0,
    total: 0,
    totalItems: 0,
  });
  expectError(t, await listTrash(world, world.bobby, `?type=project&id=${gone.id}`), 404);
});

t.test('restore: a dataset, a project with the models trashed with it, a model alone', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const datasetId = await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes' });
  await trashDataset(world, alice, 'alice', 'shapes');
  expectError(t, await restore(world, world.bobby, { id: datasetId, type: 'dataset' }), 404, /trash/);
  expectError(t, await restore(world, alice, { id: datasetId, type: 'project' }), 404);
  t.same((await restore(world, alice, { id: datasetId, type: 'dataset' })).body, {
    success: true,
    id: datasetId,
    type: 'dataset',
  });
  t.equal((await call(server, 'GET', '/api/datasets/alice/shapes', { key: alice })).status, 200);
  expectError(
    t,
    await restore(world, alice, { id: datasetId, type: 'dataset' }),
    404,
    /No dataset \w+ in this workspace's trash/,
  ); // active: not in trash

  const project = await addProject(server, 'alice', 'cars', ['early', 'first', 'second']);
  await trashModel(server, project.models.early, daysFromNow(-1));
  await trashProject(server, project.id);
  expectError(
    t,
    await restore(world, alice, { id: project.models.first, type: 'model' }),
    409,
    /project "cars" is in trash: restore the project/,
  );
  expectError(t, await restore(world, alice, { id: project.models.early, type: 'model' }), 409, /restore the project/);
  expectError(t, await restore(world, world.viewer, { id: project.id, type: 'project' }), 403);
  const restored = await restore(world, alice, { id: project.id, type: 'project' });
  t.same(restored.body, { success: true, id: project.id, type: 'project', restoredModels: 2 });
  const states = await sql<{ slug: string; trashed: boolean; with_project: boolean }>(
    server,
    'select slug, deleted_at is not null as trashed, trashed_with_project as with_project from models where project_id = ? order by slug',
    [project.id],
  );
  t.same(
    states,
    [
      { slug: 'early', trashed: true, with_project: false },
      { slug: 'first', trashed: false, with_project: false },
      { slug: 'second', trashed: false, with_project: false },
    ],
    'the model trashed on its own before stays in trash',
  );
  t.same(
    (await listTrash(world, alice)).body.items.map((item) => item.slug),
    ['early'],
  );
  t.same((await restore(world, alice, { id: project.models.early, type: 'model' })).body, {
    success: true,
    id: project.models.early,
    type: 'model',
  });
  t.equal((await listTrash(world, alice)).body.summary.total, 0);

  expectError(t, await restore(world, alice, { id: datasetId }), 400, /body\.type/);
  expectError(t, await restore(world, alice, { id: 'nope', type: 'dataset' }), 400, /body\.id/);
  expectError(t, await restore(world, alice, { id: datasetId, type: 'workflow' }), 400, /body\.type/);
});

t.test('permanent delete: one item, all, the files nothing uses any more, slug reuse', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const aliceWs = await workspaceOf(server, 'alice');
  const shapesId = await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes' });
  const otherId = await createDataset(world, alice, { dataset: 'other', name: 'Other' });
  const [shared, own] = [await shapeImage(), await shapeImage()];
  const intake = server.services().imageIntake;
  await intake.add(shapesId, [
    { bytes: shared.bytes, filename: 'shared.png' },
    { bytes: own.bytes, filename: 'own.png' },
  ]);
  await intake.add(otherId, [{ bytes: shared.bytes, filename: 'shared.png' }]);
  // Every kind of file a dataset has: a version's NDJSON, the current export, an uploaded archive.
  t.equal((await call(server, 'POST', '/api/datasets/alice/shapes/export', { key: alice, body: {} })).status, 200);
  t.equal((await call(server, 'GET', '/api/datasets/alice/shapes/export', { key: alice })).status, 200);
  const upload = await call<{ uploadUrl: string; headers: Record<string, string> }>(
    server,
    'POST',
    '/api/upload/signed-url',
    {
      key: alice,
      body: {
        assetType: 'datasets',
        assetId: shapesId,
        filename: 'more.zip',
        contentType: 'application/zip',
        totalBytes: 3,
      },
    },
  );
  t.equal(
    (await fetch(upload.body.uploadUrl, { method: 'PUT', headers: upload.body.headers, body: 'zip' })).status,
    200,
  );
  const datasetFiles = (await blobKeys(server, `ws/${aliceWs}/datasets/${shapesId}/`)).length;
  t.equal(datasetFiles, 3, 'version, export and upload files are stored');
  const imagesBefore = await blobKeys(server, `ws/${aliceWs}/images/`);
  t.equal(imagesBefore.length, 2);

  await trashDataset(world, alice, 'alice', 'shapes');
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'shapes', name: 'Again' } }),
    409,
    /in trash/,
  );
  expectError(t, await erase(world, world.bobby, { id: shapesId, type: 'dataset' }), 404);
  expectError(t, await erase(world, world.viewer, { id: shapesId, type: 'dataset' }), 403);
  t.same((await erase(world, alice, { id: shapesId, type: 'dataset' })).body, {
    success: true,
    deletedCount: 1,
    cascadedModels: 0,
    survivingDeployments: 0,
  });
  expectError(t, await erase(world, alice, { id: shapesId, type: 'dataset' }), 404, /in this workspace's trash/); // deleted for good
  t.same(await blobKeys(server, `ws/${aliceWs}/datasets/${shapesId}/`), [], 'its files are gone');
  const sharedHash = createHash('sha256').update(shared.bytes).digest('hex');
  t.same(
    await blobKeys(server, `ws/${aliceWs}/images/`),
    imagesBefore.filter((key) => key.includes(sharedHash)),
    'bytes another dataset uses stay, the rest go',
  );
  t.equal((await blobKeys(server, `ws/${aliceWs}/thumbnails/`)).length, 1);
  t.equal(
    (await call<{ images: unknown[] }>(server, 'GET', '/api/datasets/alice/other/images', { key: alice })).body.images
      .length,
    1,
  );
  const storage = await call<{ byKind: Record<string, number> }>(server, 'GET', '/api/storage', { key: alice });
  t.equal(storage.body.byKind.datasetArchives, 0, 'no file of it is counted');
  t.equal(
    (await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'shapes', name: 'Again' } })).status,
    201,
    'its URL name is free again',
  );

  // Weights shared by a clone in another project stay; the rest go, with the models' unfinished uploads.
  const original = await addProject(server, 'alice', 'original', ['base', 'tuned']);
  const clones = await addProject(server, 'alice', 'clones', ['base-copy'], { 'base-copy': original.keys.base });
  const pending = await putBlob(
    server,
    aliceWs,
    `ws/${aliceWs}/models/${original.models.tuned}/uploads/s2/next.pt`,
    'modelFiles',
  );
  await sql(
    server,
    `insert into upload_sessions (id, created_at, updated_at, workspace_id, asset_type, asset_id, filename, content_type, total_bytes, object_key, create_only, status, expires_at)
    values ('0123456789abcdef01234567', now(), now(), ?, 'models', ?, 'next.pt', 'application/octet-stream', 1, ?, false, 'uploaded', now() + interval '1 hour')`,
    [aliceWs, original.models.tuned, pending],
  );
  await trashProject(server, original.id);
  t.same((await erase(world, alice, { id: original.id, type: 'project' })).body, {
    success: true,
    deletedCount: 1,
    cascadedModels: 2,
    survivingDeployments: 0,
  });
  t.same(
    await blobKeys(server, `ws/${aliceWs}/models/`),
    [original.keys.base],
    'only the weights the clone uses are left',
  );
  t.same(await sql(server, 'select count(*)::int as n from upload_sessions'), [{ n: 0 }]);
  const modelBytes = (await call<{ byKind: Record<string, number> }>(server, 'GET', '/api/storage', { key: alice }))
    .body.byKind.modelFiles;
  t.equal(modelBytes, Buffer.byteLength(`blob ${original.keys.base}`));

  // Emptying the trash: admins only; everything in it goes, the clone's (now unshared) weights too.
  await trashModel(server, clones.models['base-copy']);
  await trashDataset(world, alice, 'alice', 'other');
  const [busyJob] = await sql<{ id: string }>(
    server,
    `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status)
    values ('00000000000000000000beef', now(), now(), ?, 'ingest', ?, 'running') returning id`,
    [aliceWs, otherId],
  );
  expectError(t, await erase(world, alice, { all: true }), 409, /ingest.*"other"/);
  expectError(t, await erase(world, alice, { id: otherId, type: 'dataset' }), 409, /ingest/);
  await sql(server, `update jobs set status = 'completed' where id = ?`, [busyJob.id]);
  expectError(t, await erase(world, alice, { all: false }), 400, 'body: send id and type, or all: true');
  expectError(t, await erase(world, alice, { all: true, id: otherId, type: 'dataset' }), 400);
  expectError(t, await erase(world, alice, {}), 400);
  t.same((await erase(world, alice, { all: true })).body, {
    success: true,
    deletedCount: 2,
    cascadedModels: 0,
    survivingDeployments: 0,
  });
  t.same(await blobKeys(server, `ws/${aliceWs}/`), [], 'no file is left, the bytes the two datasets shared included');
  t.equal((await call<{ totalBytes: number }>(server, 'GET', '/api/storage', { key: alice })).body.totalBytes, 0);
  t.equal((await listTrash(world, alice)).body.summary.total, 0);
  t.same(
    (await erase(world, alice, { all: true })).body,
    { success: true, deletedCount: 0, cascadedModels: 0, survivingDeployments: 0 },
    'an empty trash empties',
  );

  // In a team: an editor deletes one item, emptying it all needs an admin or the owner.
  const teamSet = await createDataset(world, world.editor, { dataset: 'team-set', name: 'T', owner: 'acme-team' });
  await trashDataset(world, world.editor, 'acme-team', 'team-set');
  expectError(t, await erase(world, world.editor, { all: true }), 403);
  expectError(t, await erase(world, alice, { id: teamSet, type: 'dataset' }), 404); // another workspace's item
  t.equal((await erase(world, world.editor, { id: teamSet, type: 'dataset' })).body.deletedCount, 1);
  t.equal((await erase(world, world.team, { all: true })).body.deletedCount, 0);
});

t.test('a project → models → trash → restore → trash → purge cycle with a fake clock', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const aliceWs = await workspaceOf(server, 'alice');
  const project = await addProject(server, 'alice', 'cycle', ['yolo-a', 'yolo-b', 'loner']);
  await trashModel(server, project.models.loner);
  await trashProject(server, project.id);
  t.equal((await restore(world, alice, { id: project.id, type: 'project' })).body.restoredModels, 2);
  await trashProject(server, project.id);
  t.same(
    (await listTrash(world, alice)).body.items.map((item) => `${item.type}:${item.slug}:${item.modelCount ?? ''}`),
    ['project:cycle:3', 'model:loner:'],
  );
  await createDataset(world, alice, { dataset: 'old-set', name: 'Old' });
  await trashDataset(world, alice, 'alice', 'old-set');
  await createDataset(world, alice, { dataset: 'young-set', name: 'Young' });
  await trashDataset(world, alice, 'alice', 'young-set', daysFromNow(5));

  const services = server.services();
  t.same(
    await purgeExpired(services.em, services.storage, daysFromNow(29)),
    { deletedCount: 0, cascadedModels: 0 },
    'nothing is 30 days old yet',
  );
  t.equal((await listTrash(world, alice)).body.summary.total, 4);
  const purged = await purgeExpired(services.em, services.storage, daysFromNow(31));
  t.same(
    purged,
    { deletedCount: 3, cascadedModels: 2 },
    'the loner, then the project with its two other models, then the old dataset',
  );
  t.same(
    (await listTrash(world, alice)).body.items.map((item) => item.slug),
    ['young-set'],
    'items younger than 30 days stay',
  );
  t.same(await sql(server, 'select count(*)::int as n from models'), [{ n: 0 }]);
  t.same(await blobKeys(server, `ws/${aliceWs}/models/`), [], 'their weights are gone');
  t.equal(
    (await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'old-set', name: 'Old' } })).status,
    201,
    'a purged URL name is free',
  );
  t.same(
    await purgeExpired(services.em, services.storage, daysFromNow(31)),
    { deletedCount: 0, cascadedModels: 0 },
    'a second run finds nothing',
  );
});

t.test('two purge runners at once delete each item exactly once', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const aliceWs = await workspaceOf(server, 'alice');
  const old = daysFromNow(-40);
  const shared = await shapeImage();
  for (let i = 0; i < 6; i += 1) {
    const id = await createDataset(world, alice, { dataset: `set-${i}`, name: `Set ${i}` });
    await server.services().imageIntake.add(id, [
      { bytes: shared.bytes, filename: 'shared.png' },
      { bytes: (await shapeImage()).bytes, filename: 'own.png' },
    ]);
    await trashDataset(world, alice, 'alice', `set-${i}`, old);
  }
  const first = await addProject(server, 'alice', 'p-0', ['a', 'b']);
  for (let i = 0; i < 4; i += 1) {
    // Every project holds a clone of the first one's weights, and a model trashed on its own.
    const project = i === 0 ? first : await addProject(server, 'alice', `p-${i}`, ['a', 'b'], { a: first.keys.a });
    const loner = await addProject(server, 'alice', `q-${i}`, ['solo'], { solo: first.keys.b });
    await trashProject(server, project.id, old);
    await trashModel(server, loner.models.solo, old);
  }
  const [one, two] = [server.services(), server.services()];
  const results = await Promise.all([
    purgeExpired(one.em, one.storage, new Date()),
    purgeExpired(two.em, two.storage, new Date()),
  ]);
  t.equal(
    results[0].deletedCount + results[1].deletedCount,
    6 + 4 + 4,
    'six datasets, four projects, four lone models: each once',
  );
  t.equal(results[0].cascadedModels + results[1].cascadedModels, 8);
  t.equal((await listTrash(world, alice)).body.summary.total, 0);
  t.same(await blobKeys(server, `ws/${aliceWs}/`), [], 'every file went, the shared ones included');
  t.same(await sql(server, 'select count(*)::int as n from stored_objects'), [{ n: 0 }]);
});

t.test('through the project and model DELETE routes: trash, restore, delete for good, reuse the name', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const aliceWs = await workspaceOf(server, 'alice');
  const projectId = await createProject(world, alice, { project: 'detector', name: 'Detector' });
  const one = await createModel(world, alice, { project: 'detector', model: 'one' });
  const two = await createModel(world, alice, { project: 'detector', model: 'two' });
  await uploadWeights(world, alice, one.id, Buffer.from('weights one'));
  await uploadWeights(world, alice, two.id, Buffer.from('weights two'));
  t.equal((await call(server, 'DELETE', '/api/models/alice/detector/two', { key: alice })).status, 200);
  t.equal((await call(server, 'DELETE', '/api/projects/alice/detector', { key: alice })).status, 200);
  const listed = await listTrash(world, alice);
  t.same(listed.body.items.map((item) => `${item.type}:${item.slug}:${item.modelCount ?? ''}`).sort(), [
    'model:two:',
    'project:detector:2',
  ]);

  t.same((await restore(world, alice, { id: projectId, type: 'project' })).body, {
    success: true,
    id: projectId,
    type: 'project',
    restoredModels: 1,
  });
  t.equal((await call(server, 'GET', '/api/models/alice/detector/one', { key: alice })).status, 200);
  expectError(t, await call(server, 'GET', '/api/models/alice/detector/two', { key: alice }), 404);

  t.equal((await call(server, 'DELETE', '/api/projects/alice/detector', { key: alice })).status, 200);
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Again' } }),
    409,
  );
  t.same((await erase(world, alice, { id: projectId, type: 'project' })).body, {
    success: true,
    deletedCount: 1,
    cascadedModels: 2,
    survivingDeployments: 0,
  });
  t.same(await blobKeys(server, `ws/${aliceWs}/models/`), [], 'both weights are gone');
  t.equal(
    (await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Again' } })).status,
    201,
    'the URL name is free again',
  );
});
