// The Projects API: create, list, read with model summaries and search, update, rename, stars, trash with its
// models, and clone with shared weights, over real HTTP and PostgreSQL.
import t from 'tap';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { Project } from '../control-plane/src/projects/project.entity.ts';
import { expectError } from './helpers/expect.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

interface ModelSummary {
  model: string;
  status: string;
  weights: { name: string; size: number } | null;
  metrics: Record<string, number> | null;
  trainArgs: Record<string, unknown> | null;
  epochs: number | null;
}
interface ProjectRead {
  project: Record<string, unknown>;
  models: ModelSummary[];
  isOwner: boolean;
}

t.test('create: defaults, limits and conflicts', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const created = await call(server, 'POST', '/api/projects', {
    key: alice,
    body: { project: 'detector', name: 'Detector', tags: ['cars'], metadata: { site: 'north' } },
  });
  t.equal(created.status, 201);
  t.match(created.body, { id: /^[0-9a-f]{24}$/, owner: 'alice', project: 'detector', region: 'us' });
  t.same(Object.keys(created.body).sort(), ['id', 'owner', 'project', 'region']);

  const read = await call<ProjectRead>(server, 'GET', '/api/projects/alice/detector', { key: alice });
  t.equal(read.status, 200);
  t.match(read.body, {
    project: {
      name: 'Detector',
      visibility: 'private',
      tags: ['cars'],
      metadata: { site: 'north' },
      archived: false,
      viewPreferences: {},
      starred: false,
      starCount: 0,
      modelCount: 0,
      region: 'us',
    },
    models: [],
    isOwner: true,
  });

  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Again' } }),
    409,
    /already exists/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'Bad Slug', name: 'x' } }),
    400,
    /project/,
  );
  expectError(t, await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'x' } }), 400, /name/);
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'x', name: 'a'.repeat(101) } }),
    400,
    /name/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', {
      key: alice,
      body: { project: 'x', name: 'x', description: 'd'.repeat(1001) },
    }),
    400,
    /description/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', {
      key: alice,
      body: { project: 'x', name: 'x', tags: Array(51).fill('t') },
    }),
    400,
    /tags/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', {
      key: alice,
      body: { project: 'x', name: 'x', metadata: { ['k'.repeat(129)]: 1 } },
    }),
    400,
    /128/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'x', name: 'x', owner: 'acme-team' } }),
    403,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: world.viewer, body: { project: 'x', name: 'x' } }),
    403,
    'Permission denied for this operation',
  );
  expectError(t, await call(server, 'POST', '/api/projects', { body: { project: 'x', name: 'x' } }), 401);
  t.equal(
    (
      await call(server, 'POST', '/api/projects', {
        key: world.editor,
        body: { project: 'team-project', name: 'T', owner: 'acme-team' },
      })
    ).status,
    201,
  );

  const summary = await call<{ counts: { projects: number; models: number } }>(server, 'GET', '/api/account/summary', {
    key: alice,
  });
  t.match(summary.body.counts, { projects: 1, models: 0 });
});

t.test('list and read: visibility, limits, anonymous reads', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, { project: 'open', name: 'Open', visibility: 'public' });
  await createProject(world, alice, { project: 'closed', name: 'Closed' });

  const own = await call<{ projects: Array<{ project: string }>; total: number; region: string }>(
    server,
    'GET',
    '/api/projects/alice',
    { key: alice },
  );
  t.equal(own.body.total, 2);
  t.equal(own.body.region, 'us');
  for (const [who, key] of [
    ['stranger', bobby],
    ['anonymous', undefined],
  ] as const) {
    const seen = await call<{ projects: Array<{ project: string }> }>(server, 'GET', '/api/projects/alice', { key });
    t.same(
      seen.body.projects.map((p) => p.project),
      ['open'],
      `${who} sees only public projects`,
    );
    const read = await call<ProjectRead>(server, 'GET', '/api/projects/alice/open', { key });
    t.equal(read.status, 200);
    t.equal(read.body.isOwner, false);
    expectError(t, await call(server, 'GET', '/api/projects/alice/closed', { key }), 404);
  }
  t.equal(
    (await call<{ projects: unknown[] }>(server, 'GET', '/api/projects/alice?limit=1', { key: alice })).body.projects
      .length,
    1,
  );
  t.equal((await call(server, 'GET', '/api/projects/alice?limit=500', { key: alice })).status, 200);
  expectError(t, await call(server, 'GET', '/api/projects/alice?limit=501', { key: alice }), 400, /limit/);
  expectError(t, await call(server, 'GET', '/api/projects/nobody-here', { key: alice }), 404);
  expectError(
    t,
    await call(server, 'GET', `/api/projects/alice/open?search=${'s'.repeat(201)}`, { key: alice }),
    400,
    /search/,
  );

  await createProject(world, world.team, { project: 'team-private', name: 'TP' });
  t.equal(
    (await call<ProjectRead>(server, 'GET', '/api/projects/acme-team/team-private', { key: world.viewer })).body
      .isOwner,
    true,
  );
  expectError(
    t,
    await call(server, 'GET', '/api/projects/acme-team/team-private', { key: alice }),
    404,
    'Project acme-team/team-private not found',
  );
});

t.test('read: model summaries and search by name or metadata', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  await createProject(world, alice, { project: 'detector', name: 'Detector' });
  const yolo = await createModel(world, alice, {
    project: 'detector',
    model: 'yolo-small',
    name: 'YOLO small',
    metrics: { mAP50: 0.5 },
    trainArgs: { epochs: 10 },
    epochs: 10,
  });
  await createModel(world, alice, {
    project: 'detector',
    model: 'rt-detr',
    name: 'RT-DETR',
    metadata: { camera: 'Dock_50%' },
  });
  await uploadWeights(world, alice, yolo.id, Buffer.alloc(1234, 7), 'weights.onnx');

  const read = await call<ProjectRead>(server, 'GET', '/api/projects/alice/detector', { key: alice });
  t.equal(read.body.project.modelCount, 2);
  t.same(
    read.body.models.map((m) => m.model),
    ['rt-detr', 'yolo-small'],
    'newest first',
  );
  t.match(read.body.models[1], {
    status: 'pending',
    metrics: { mAP50: 0.5 },
    trainArgs: { epochs: 10 },
    epochs: 10,
    weights: { name: 'yolo-small.onnx', size: 1234 },
    hasWeights: true,
    file: { size: 1234 },
    epochCount: 0,
  });
  t.equal(read.body.models[0].weights, null);
  t.match(read.body.models[0], { hasWeights: false, epochCount: 0 });
  t.notOk('file' in read.body.models[0] || 'metrics' in read.body.models[0], 'no weights, no metrics: absent');

  const search = async (text: string) =>
    (
      await call<ProjectRead>(server, 'GET', `/api/projects/alice/detector?search=${encodeURIComponent(text)}`, {
        key: alice,
      })
    ).body.models.map((m) => m.model);
  t.same(await search('yolo'), ['yolo-small'], 'by name, case ignored');
  t.same(await search('dock_50%'), ['rt-detr'], 'by metadata value, wildcards taken literally');
  t.same(await search('camera'), ['rt-detr'], 'by metadata key');
  t.same(await search('50_'), [], 'an underscore is not a wildcard');
  t.same(await search('nothing'), []);
});

t.test('update: fields, rename, stars, permissions', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, { project: 'detector', name: 'Detector', visibility: 'public' });
  const fields = {
    description: 'd',
    visibility: 'public',
    tags: ['a'],
    license: 'MIT',
    iconColor: '#fff',
    iconLetter: 'D',
    archived: true,
    metadata: { source: 'cam' },
    viewPreferences: { sort: 'mAP50', columns: ['name'] },
  };
  t.same((await call(server, 'PATCH', '/api/projects/alice/detector', { key: alice, body: fields })).body, {
    success: true,
    project: 'detector',
  });
  t.match(
    (await call<ProjectRead>(server, 'GET', '/api/projects/alice/detector', { key: alice })).body.project,
    fields,
  );
  await call(server, 'PATCH', '/api/projects/alice/detector', { key: alice, body: { metadata: {}, license: null } });
  t.match((await call<ProjectRead>(server, 'GET', '/api/projects/alice/detector', { key: alice })).body.project, {
    metadata: {},
    license: null,
  });

  const renamed = await call(server, 'PATCH', '/api/projects/alice/detector', {
    key: alice,
    body: { name: 'Road Signs 2' },
  });
  t.same(renamed.body, { success: true, project: 'road-signs-2' });
  expectError(t, await call(server, 'GET', '/api/projects/alice/detector', { key: alice }), 404);
  t.equal(
    (await call<ProjectRead>(server, 'GET', '/api/projects/alice/road-signs-2', { key: alice })).body.project.name,
    'Road Signs 2',
  );
  await createProject(world, alice, { project: 'other', name: 'Other' });
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/other', { key: alice, body: { name: 'road signs 2' } }),
    409,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/other', { key: alice, body: { name: '!!!' } }),
    400,
    /name/,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/other', { key: alice, body: { unknownField: 1 } }),
    400,
  );
  expectError(t, await call(server, 'PATCH', '/api/projects/alice/other', { key: alice, body: {} }), 400);
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/other', {
      key: alice,
      body: { viewPreferences: { big: 'x'.repeat(500_001) } },
    }),
    400,
    /500000/,
  );

  // Stars: any reader, for themselves; counts stay exact under repeats and concurrency.
  await Promise.all(
    [alice, bobby, bobby, bobby].map((key) =>
      call(server, 'PATCH', '/api/projects/alice/road-signs-2', { key, body: { starred: true } }),
    ),
  );
  t.match((await call<ProjectRead>(server, 'GET', '/api/projects/alice/road-signs-2', { key: bobby })).body.project, {
    starCount: 2,
    starred: true,
  });
  await call(server, 'PATCH', '/api/projects/alice/road-signs-2', { key: bobby, body: { starred: false } });
  t.match((await call<ProjectRead>(server, 'GET', '/api/projects/alice/road-signs-2', { key: bobby })).body.project, {
    starCount: 1,
    starred: false,
  });
  const listed = await call<{ projects: Array<{ project: string; starred: boolean }> }>(
    server,
    'GET',
    '/api/projects/alice',
    { key: alice },
  );
  t.equal(listed.body.projects.find((p) => p.project === 'road-signs-2')?.starred, true);
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/road-signs-2', { key: bobby, body: { description: 'mine' } }),
    403,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/alice/other', { key: bobby, body: { starred: true } }),
    404,
  );
  expectError(t, await call(server, 'PATCH', '/api/projects/alice/other', { body: { starred: true } }), 401);

  // Team: viewers read and star, editors change.
  await createProject(world, world.team, { project: 'team-project', name: 'T' });
  t.equal(
    (
      await call(server, 'PATCH', '/api/projects/acme-team/team-project', {
        key: world.viewer,
        body: { starred: true },
      })
    ).status,
    200,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/projects/acme-team/team-project', {
      key: world.viewer,
      body: { archived: true },
    }),
    403,
  );
  t.equal(
    (
      await call(server, 'PATCH', '/api/projects/acme-team/team-project', {
        key: world.editor,
        body: { archived: true },
      })
    ).status,
    200,
  );
});

t.test('delete: the project and its models go to trash together', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const projectId = await createProject(world, alice, { project: 'detector', name: 'Detector' });
  const first = await createModel(world, alice, { project: 'detector', model: 'first' });
  const second = await createModel(world, alice, { project: 'detector', model: 'second' });
  const alone = await createModel(world, alice, { project: 'detector', model: 'alone' });
  t.equal((await call(server, 'DELETE', '/api/models/alice/detector/alone', { key: alice })).status, 200);

  expectError(t, await call(server, 'DELETE', '/api/projects/alice/detector', { key: world.bobby }), 404);
  const deleted = await call<{ cascadedModels: number; trashedModels: Array<{ id: string; model: string }> }>(
    server,
    'DELETE',
    '/api/projects/alice/detector',
    { key: alice },
  );
  t.equal(deleted.status, 200);
  t.match(deleted.body, { success: true, project: 'detector', daysRemaining: 30, deletedAt: /^\d{4}-/ });
  t.equal(deleted.body.cascadedModels, 2, 'cascadedModels counts the models');
  t.same(
    deleted.body.trashedModels.sort((a, b) => a.model.localeCompare(b.model)),
    [
      { id: first.id, model: 'first' },
      { id: second.id, model: 'second' },
    ],
    'models already in trash are not cascaded',
  );

  const em = server.orm.em.fork();
  t.ok((await em.findOneOrFail(Project, projectId)).deletedAt);
  const models = new Map((await em.find(Model, { project: projectId })).map((m) => [m.slug, m]));
  t.match(models.get('first'), { trashedWithProject: true, deletedAt: Date });
  t.match(models.get('second'), { trashedWithProject: true });
  t.match(models.get('alone'), { trashedWithProject: false, deletedAt: Date }, 'a model trashed on its own stays so');
  t.ok(alone.id);

  expectError(t, await call(server, 'GET', '/api/projects/alice/detector', { key: alice }), 404);
  expectError(t, await call(server, 'GET', '/api/models/alice/detector/first', { key: alice }), 404);
  expectError(t, await call(server, 'DELETE', '/api/projects/alice/detector', { key: alice }), 404);
  expectError(
    t,
    await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Again' } }),
    409,
    /in trash/,
  );
  expectError(t, await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector' } }), 404);
  t.same((await call<{ projects: unknown[] }>(server, 'GET', '/api/projects/alice', { key: alice })).body.projects, []);
  t.match((await call(server, 'GET', '/api/account/summary', { key: alice })).body, {
    counts: { projects: 0, models: 0 },
  });
  // A trashed model takes no weights.
  expectError(
    t,
    await call(server, 'POST', '/api/upload/signed-url', {
      key: alice,
      body: {
        assetType: 'models',
        assetId: first.id,
        filename: 'best.pt',
        contentType: 'application/octet-stream',
        totalBytes: 10,
      },
    }),
    404,
    /^Model [0-9a-f]{24} not found$/,
  );

  await createProject(world, world.team, { project: 'team-project', name: 'T' });
  expectError(t, await call(server, 'DELETE', '/api/projects/acme-team/team-project', { key: world.viewer }), 403);
});

t.test('clone: the project with its completed models, weights shared', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, {
    project: 'detector',
    name: 'Detector',
    visibility: 'public',
    tags: ['x'],
    metadata: { a: 1 },
  });
  const done = await createModel(world, alice, { project: 'detector', model: 'done', metrics: { mAP50: 0.9 } });
  await createModel(world, alice, { project: 'detector', model: 'pending' });
  const weights = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
  await uploadWeights(world, alice, done.id, weights);
  t.equal(
    (await call(server, 'PATCH', '/api/models/alice/detector/done', { key: alice, body: { status: 'completed' } }))
      .status,
    200,
  );

  const cloned = await call<{ id: string; project: string; name: string; modelCount: number }>(
    server,
    'POST',
    '/api/projects/alice/detector/clone',
    { key: alice },
  );
  t.equal(cloned.status, 201);
  t.match(cloned.body, {
    owner: 'alice',
    project: 'detector-copy',
    name: 'Detector (copy)',
    modelCount: 1,
    region: 'us',
  });
  const copy = await call<ProjectRead>(server, 'GET', '/api/projects/alice/detector-copy', { key: alice });
  t.match(copy.body.project, { visibility: 'private', tags: ['x'], metadata: { a: 1 } });
  t.same(
    copy.body.models.map((m) => m.model),
    ['done'],
    'only completed models',
  );
  t.match(copy.body.models[0], {
    status: 'completed',
    metrics: { mAP50: 0.9 },
    weights: { name: 'done.pt', size: 5000 },
  });
  t.equal(
    (await call<{ project: string }>(server, 'POST', '/api/projects/alice/detector/clone', { key: alice, body: {} }))
      .body.project,
    'detector-copy-2',
  );

  // Weights are shared: both rows point at one file, and both download URLs serve it.
  const em = server.orm.em.fork();
  const rows = await em.find(Model, { slug: 'done' });
  t.equal(new Set(rows.map((row) => row.fileKey)).size, 1, 'one file for every copy');
  for (const path of ['/api/models/alice/detector/done/files', '/api/models/alice/detector-copy/done/files']) {
    const files = await call<{ files: Array<{ name: string; size: number; downloadUrl: string }> }>(
      server,
      'GET',
      path,
      { key: alice },
    );
    t.match(files.body.files, [{ name: 'done.pt', size: 5000 }]);
    t.same(Buffer.from(await (await fetch(files.body.files[0].downloadUrl)).arrayBuffer()), weights);
  }

  // Into another workspace: a public source, the caller's own workspace only.
  const foreign = await call(server, 'POST', '/api/projects/alice/detector/clone', {
    key: bobby,
    body: { project: 'mine', name: 'Mine', visibility: 'public', description: 'copied' },
  });
  t.match(foreign.body, { owner: 'bobby', project: 'mine', name: 'Mine', modelCount: 1 });
  t.match((await call<ProjectRead>(server, 'GET', '/api/projects/bobby/mine', { key: bobby })).body.project, {
    visibility: 'public',
    description: 'copied',
  });
  expectError(
    t,
    await call(server, 'POST', '/api/projects/alice/detector/clone', { key: bobby, body: { project: 'mine' } }),
    409,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/projects/alice/detector/clone', { key: bobby, body: { owner: 'alice' } }),
    403,
  );
  await createProject(world, alice, { project: 'secret', name: 'Secret' });
  expectError(t, await call(server, 'POST', '/api/projects/alice/secret/clone', { key: bobby }), 404);
  expectError(t, await call(server, 'POST', '/api/projects/alice/detector/clone', { key: world.viewer }), 403);
  expectError(t, await call(server, 'POST', '/api/projects/alice/detector/clone', {}), 401);
});
