// The Models API: create, list, read (and analysis), update, stars, moves between projects, trash, weights
// files, clone with shared weights, training status and reference URIs, over real HTTP and PostgreSQL.
import t from 'tap';
import { ANONYMOUS } from '../control-plane/src/auth/actor.ts';
import { Authenticator } from '../control-plane/src/auth/authenticator.ts';
import { Dataset } from '../control-plane/src/datasets/dataset.entity.ts';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { resolveDatasetReference, resolveModelReference } from '../control-plane/src/models/references.ts';
import { expectError } from './helpers/expect.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface ModelRead {
  model: Record<string, unknown>;
  isOwner: boolean;
}
interface Files {
  files: Array<{ name: string; size: number; downloadUrl: string }>;
}

t.test('create: generated names, limits and conflicts', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  await createProject(world, alice, { project: 'detector', name: 'Detector' });
  const created = await call(server, 'POST', '/api/models', {
    key: alice,
    body: {
      project: 'detector',
      model: 'yolo',
      name: 'YOLO',
      description: 'd',
      task: 'segment',
      metadata: { a: 1 },
      trainArgs: { imgsz: 640 },
      metrics: { mAP50: 0.4 },
      epochs: 5,
      version: '8.3',
    },
  });
  t.equal(created.status, 201);
  t.match(created.body, { id: /^[0-9a-f]{24}$/, owner: 'alice', project: 'detector', model: 'yolo', region: 'us' });
  t.same(Object.keys(created.body).sort(), ['id', 'model', 'name', 'owner', 'project', 'region']);
  t.equal(created.body.name, 'YOLO');
  const read = await call<ModelRead>(server, 'GET', '/api/models/alice/detector/yolo', { key: alice });
  t.match(read.body, {
    model: {
      name: 'YOLO',
      description: 'd',
      task: 'segment',
      status: 'pending',
      metadata: { a: 1 },
      trainArgs: { imgsz: 640 },
      metrics: { mAP50: 0.4 },
      epochs: 5,
      version: '8.3',
      weights: null,
      hasWeights: false,
      starred: false,
      isStarred: false,
      starCount: 0,
      projectName: 'Detector',
      visibility: 'private',
    },
    isOwner: true,
  });
  // Optional fields the model has no value for are absent, not null (the ultralytics clients' types).
  for (const field of [
    'file',
    'bestEpoch',
    'bestFitness',
    'trainResults',
    'trainingError',
    'classNames',
    'plots',
    'startedAt',
    'completedAt',
    'color',
    'license',
  ]) {
    t.notOk(field in read.body.model, `${field} is absent`);
  }

  const generated = await call<{ model: string }>(server, 'POST', '/api/models', {
    key: alice,
    body: { project: 'detector' },
  });
  t.equal(generated.status, 201);
  t.match(generated.body.model, /^[a-z]+-[a-z]+-\d{2}$/, 'a random readable URL name');
  t.equal(
    (await call<ModelRead>(server, 'GET', `/api/models/alice/detector/${generated.body.model}`, { key: alice })).body
      .model.name,
    generated.body.model,
  );

  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', name: 'Only a name' } }),
    400,
    /name/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', model: 'yolo' } }),
    409,
    /already exists/,
  );
  expectError(t, await call(server, 'POST', '/api/models', { key: alice, body: { model: 'x' } }), 400, /project/);
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'nowhere' } }),
    404,
    'Project alice/nowhere not found',
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', {
      key: alice,
      body: { project: 'detector', description: 'd'.repeat(1001) },
    }),
    400,
    /description/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', version: 'v'.repeat(51) } }),
    400,
    /version/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', epochs: 'ten' } }),
    400,
    /epochs/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', task: 'track' } }),
    400,
    /task/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'detector', owner: 'acme-team' } }),
    403,
  );
  // A key reaches its own workspace only.
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: world.bobby, body: { project: 'detector' } }),
    404,
    'Project bobby/detector not found',
  );
  expectError(t, await call(server, 'POST', '/api/models', { body: { project: 'detector' } }), 401);
  await createProject(world, world.team, { project: 'team-project', name: 'T' });
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: world.viewer, body: { project: 'team-project' } }),
    403,
  );
  t.equal(
    (
      await call(server, 'POST', '/api/models', {
        key: world.editor,
        body: { project: 'team-project', owner: 'acme-team' },
      })
    ).status,
    201,
  );
  t.match((await call(server, 'GET', '/api/account/summary', { key: alice })).body, {
    counts: { projects: 1, models: 2 },
  });
});

t.test('list, read, analysis and anonymous access', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, { project: 'open', name: 'Open', visibility: 'public' });
  await createProject(world, alice, { project: 'closed', name: 'Closed' });
  for (const model of ['one', 'two', 'three']) await createModel(world, alice, { project: 'open', model });
  await createModel(world, alice, { project: 'closed', model: 'hidden' });

  const list = await call<{
    models: Array<{ model: string; owner: string; project: string }>;
    total: number;
    region: string;
  }>(server, 'GET', '/api/models/alice/open', { key: alice });
  t.match(list.body, { total: 3, region: 'us' });
  t.same(
    list.body.models.map((m) => m.model),
    ['three', 'two', 'one'],
  );
  t.match(list.body.models[0], { owner: 'alice', project: 'open' });
  t.equal(
    (await call<{ models: unknown[]; total: number }>(server, 'GET', '/api/models/alice/open?limit=2', { key: alice }))
      .body.models.length,
    2,
  );
  expectError(t, await call(server, 'GET', '/api/models/alice/open?limit=101', { key: alice }), 400, /limit/);

  for (const [who, key] of [
    ['stranger', bobby],
    ['anonymous', undefined],
  ] as const) {
    t.equal(
      (await call(server, 'GET', '/api/models/alice/open', { key })).status,
      200,
      `${who} lists a public project's models`,
    );
    t.equal((await call<ModelRead>(server, 'GET', '/api/models/alice/open/one', { key })).body.isOwner, false);
    t.same((await call(server, 'GET', '/api/models/alice/open/one/training', { key })).body, { job: null });
    expectError(t, await call(server, 'GET', '/api/models/alice/closed', { key }), 404);
    expectError(
      t,
      await call(server, 'GET', '/api/models/alice/closed/hidden', { key }),
      404,
      'Model alice/closed/hidden not found',
    );
    expectError(t, await call(server, 'GET', '/api/models/alice/closed/hidden/training', { key }), 404);
  }
  expectError(t, await call(server, 'GET', '/api/models/alice/open/one/files'), 401);
  expectError(t, await call(server, 'GET', '/api/models/alice/open/nope', { key: alice }), 404);

  // Analysis: the recorded per-image rows summarised by F1, or null.
  t.same((await call(server, 'GET', '/api/models/alice/open/one?analysis=1', { key: alice })).body, { analysis: null });
  const em = server.orm.em.fork();
  const one = await em.findOneOrFail(Model, { slug: 'one' });
  one.analysis = [
    { image: 'abc', tp: 1, fp: 1, fn: 0 },
    { image: 'def', tp: 2, fp: 0, fn: 0 },
  ];
  await em.flush();
  const analysis = (
    await call<{ analysis: Record<string, unknown> }>(server, 'GET', '/api/models/alice/open/one?analysis=1')
  ).body.analysis;
  t.match(analysis, {
    population: 2,
    retained: 2,
    coverage: { mode: 'full' },
    scatterSample: {
      eligible: 2,
      rows: [
        ['abc', 1, 1, 0],
        ['def', 2, 0, 0],
      ],
    },
    cohorts: {
      worst: {
        count: 2,
        metrics: { tp: 3, fp: 1, fn: 0 },
        examples: [
          { hash: 'abc', f1: 2 / 3, isEmptyGroundTruth: false },
          { hash: 'def', f1: 1 },
        ],
      },
      best: { examples: [{ hash: 'def' }, { hash: 'abc' }] },
    },
    comparisons: null,
  });
  t.ok(
    'model' in (await call(server, 'GET', '/api/models/alice/open/one?analysis=0')).body,
    'analysis other than 1 reads the model',
  );
  expectError(t, await call(server, 'GET', '/api/models/alice/open/one?analysis=x'), 400, /analysis/);
});

t.test('update: fields, rename, stars, permissions', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, { project: 'open', name: 'Open', visibility: 'public' });
  await createModel(world, alice, { project: 'open', model: 'yolo' });
  await createModel(world, alice, { project: 'open', model: 'other' });
  const fields = {
    description: 'd',
    color: '#ff0000',
    metadata: { b: 2 },
    status: 'completed',
    license: 'AGPL-3.0',
    datasetSlug: 'shapes',
    trainArgs: { epochs: 3 },
    trainResults: [{ epoch: 0, metrics: { loss: 0.1 }, fitness: 0.7 }],
    epochs: 3,
    bestEpoch: 2,
    bestFitness: 0.75,
    version: '1.0',
  };
  t.same(
    (
      await call(server, 'PATCH', '/api/models/alice/open/yolo', {
        key: alice,
        body: { ...fields, trainingError: { message: 'out of memory', code: 'OOM' } },
      })
    ).body,
    { success: true, model: 'yolo' },
  );
  t.match((await call<ModelRead>(server, 'GET', '/api/models/alice/open/yolo', { key: alice })).body.model, {
    ...fields,
    trainingError: { message: 'out of memory', timestamp: /^\d{4}-/ },
  });
  await call(server, 'PATCH', '/api/models/alice/open/yolo', {
    key: alice,
    body: { trainingError: null, status: 'running' },
  });
  const cleared = (await call<ModelRead>(server, 'GET', '/api/models/alice/open/yolo', { key: alice })).body.model;
  t.notOk('trainingError' in cleared, 'no error: absent');
  t.equal(cleared.status, 'running', 'the statuses the clients use can be set');

  t.same((await call(server, 'PATCH', '/api/models/alice/open/yolo', { key: alice, body: { name: 'YOLO v2' } })).body, {
    success: true,
    model: 'yolo-v2',
  });
  expectError(t, await call(server, 'GET', '/api/models/alice/open/yolo', { key: alice }), 404);
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/open/other', { key: alice, body: { name: 'yolo v2' } }),
    409,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/open/other', { key: alice, body: { status: 'exploded' } }),
    400,
    /status/,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/open/other', { key: alice, body: { classNames: ['a'] } }),
    400,
  );
  expectError(t, await call(server, 'PATCH', '/api/models/alice/open/other', { key: alice, body: {} }), 400);

  await Promise.all(
    [alice, bobby, bobby].map((key) =>
      call(server, 'PATCH', '/api/models/alice/open/yolo-v2', { key, body: { starred: true } }),
    ),
  );
  t.match((await call<ModelRead>(server, 'GET', '/api/models/alice/open/yolo-v2', { key: bobby })).body.model, {
    starCount: 2,
    starred: true,
    isStarred: true,
  });
  t.match((await call<{ models: unknown[] }>(server, 'GET', '/api/models/alice/open', { key: bobby })).body.models, [
    { model: 'other', isStarred: false },
    { model: 'yolo-v2', isStarred: true, starCount: 2 },
  ]);
  t.same(
    (await call(server, 'PATCH', '/api/models/alice/open/yolo-v2', { key: bobby, body: { starred: false } })).body,
    { success: true, model: 'yolo-v2', starred: false, starCount: 1 },
  );
  t.match((await call<ModelRead>(server, 'GET', '/api/models/alice/open/yolo-v2', { key: bobby })).body.model, {
    starCount: 1,
    starred: false,
  });
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/open/yolo-v2', { key: bobby, body: { description: 'mine' } }),
    403,
  );
  expectError(t, await call(server, 'DELETE', '/api/models/alice/open/yolo-v2', { key: bobby }), 403);
});

t.test('move between projects: renamed when taken, 409 while training', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const first = await createProject(world, alice, { project: 'first', name: 'First' });
  const second = await createProject(world, alice, { project: 'second', name: 'Second' });
  const moving = await createModel(world, alice, { project: 'first', model: 'yolo' });
  await createModel(world, alice, { project: 'second', model: 'yolo' });
  await createModel(world, alice, { project: 'second', model: 'yolo-2' });

  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/first/yolo', {
      key: alice,
      body: { projectId: second, description: 'x' },
    }),
    400,
    /alone/,
  );
  await call(server, 'PATCH', '/api/models/alice/first/yolo', { key: alice, body: { status: 'running' } });
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/first/yolo', { key: alice, body: { projectId: second } }),
    409,
    /training/,
  );
  await call(server, 'PATCH', '/api/models/alice/first/yolo', { key: alice, body: { status: 'completed' } });

  const moved = await call(server, 'PATCH', '/api/models/alice/first/yolo', {
    key: alice,
    body: { projectId: second },
  });
  t.same(moved.body, {
    success: true,
    model: 'yolo-3',
    slug: 'yolo-3',
    name: 'yolo',
    projectSlug: 'second',
    projectId: second,
    renamed: true,
  });
  t.equal(
    (await call<ModelRead>(server, 'GET', '/api/models/alice/second/yolo-3', { key: alice })).body.model.id,
    moving.id,
  );
  expectError(t, await call(server, 'GET', '/api/models/alice/first/yolo', { key: alice }), 404);

  const third = await createProject(world, alice, { project: 'third', name: 'Third' });
  t.same(
    (await call(server, 'PATCH', '/api/models/alice/second/yolo-3', { key: alice, body: { projectId: third } })).body,
    {
      success: true,
      model: 'yolo-3',
      slug: 'yolo-3',
      name: 'yolo',
      projectSlug: 'third',
      projectId: third,
      renamed: false,
    },
  );

  const foreign = await createProject(world, world.bobby, { project: 'bobs', name: 'Bobs' });
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/third/yolo-3', { key: alice, body: { projectId: foreign } }),
    404,
    /Project/,
  );
  await call(server, 'DELETE', '/api/projects/alice/first', { key: alice });
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/third/yolo-3', { key: alice, body: { projectId: first } }),
    404,
    /Project/,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/third/yolo-3', { key: alice, body: { projectId: 'f'.repeat(24) } }),
    404,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/models/alice/third/yolo-3', { key: alice, body: { projectId: 'nope' } }),
    400,
    /projectId/,
  );
});

t.test('delete, files and clone with shared weights', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  await createProject(world, alice, { project: 'open', name: 'Open', visibility: 'public' });
  await createProject(world, alice, { project: 'target', name: 'Target' });
  const yolo = await createModel(world, alice, { project: 'open', model: 'yolo', metrics: { mAP50: 0.8 } });
  t.same(
    (await call(server, 'GET', '/api/models/alice/open/yolo/files', { key: alice })).body,
    { files: [] },
    'no weights yet',
  );

  const weights = Buffer.from(Array.from({ length: 7000 }, (_, i) => (i * 7) % 256));
  await uploadWeights(world, alice, yolo.id, weights, 'best.PT');
  const files = await call<Files>(server, 'GET', '/api/models/alice/open/yolo/files', { key: alice });
  t.match(files.body.files, [{ name: 'yolo.pt', size: 7000 }]);
  t.match((await call<ModelRead>(server, 'GET', '/api/models/alice/open/yolo', { key: alice })).body.model, {
    hasWeights: true,
    file: { size: 7000 },
    weights: { name: 'yolo.pt', size: 7000 },
  });
  const download = await fetch(files.body.files[0].downloadUrl);
  t.match(download.headers.get('content-disposition') ?? '', /filename="yolo.pt"/);
  t.same(Buffer.from(await download.arrayBuffer()), weights);

  // Clone into a project of the key's workspace: same record, same file.
  const cloned = await call(server, 'POST', '/api/models/alice/open/yolo/clone', {
    key: alice,
    body: { project: 'target' },
  });
  t.equal(cloned.status, 201);
  t.match(cloned.body, {
    id: /^[0-9a-f]{24}$/,
    owner: 'alice',
    project: 'target',
    model: 'yolo',
    name: 'yolo',
    region: 'us',
  });
  t.match(
    (
      await call<{ model: string }>(server, 'POST', '/api/models/alice/open/yolo/clone', {
        key: alice,
        body: { project: 'target' },
      })
    ).body,
    { model: 'yolo-copy' },
  );
  t.match(
    (
      await call(server, 'POST', '/api/models/alice/open/yolo/clone', {
        key: alice,
        body: { project: 'open', model: 'named', name: 'Named', description: 'c' },
      })
    ).body,
    { model: 'named' },
  );
  t.match((await call<ModelRead>(server, 'GET', '/api/models/alice/open/named', { key: alice })).body.model, {
    name: 'Named',
    description: 'c',
    metrics: { mAP50: 0.8 },
  });
  const copyFiles = await call<Files>(server, 'GET', '/api/models/alice/target/yolo/files', { key: alice });
  t.match(copyFiles.body.files, [{ name: 'yolo.pt', size: 7000 }]);
  t.same(Buffer.from(await (await fetch(copyFiles.body.files[0].downloadUrl)).arrayBuffer()), weights);
  const em = server.orm.em.fork();
  const keys = new Set((await em.find(Model, { workspace: { handle: 'alice' } })).map((m) => m.fileKey));
  t.equal(keys.size, 1, 'every copy points at the one file');

  // Into another workspace from a public project; only into the key's own workspace.
  await createProject(world, bobby, { project: 'mine', name: 'Mine' });
  t.match(
    (await call(server, 'POST', '/api/models/alice/open/yolo/clone', { key: bobby, body: { project: 'mine' } })).body,
    { owner: 'bobby', project: 'mine', model: 'yolo' },
  );
  t.equal(
    (await call<Files>(server, 'GET', '/api/models/bobby/mine/yolo/files', { key: bobby })).body.files[0].size,
    7000,
  );
  t.equal(
    (await call<Files>(server, 'GET', '/api/models/alice/open/yolo/files', { key: bobby })).status,
    200,
    'a public model can be downloaded by any key',
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models/alice/open/yolo/clone', {
      key: bobby,
      body: { project: 'mine', model: 'yolo' },
    }),
    409,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models/alice/open/yolo/clone', { key: bobby, body: { project: 'target' } }),
    404,
    'Project bobby/target not found',
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models/alice/open/yolo/clone', {
      key: bobby,
      body: { project: 'mine', owner: 'alice' },
    }),
    403,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models/alice/open/yolo/clone', { key: bobby, body: {} }),
    400,
    /project/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/models/alice/target/yolo/clone', { key: bobby, body: { project: 'mine' } }),
    404,
    'Model alice/target/yolo not found',
  );
  expectError(t, await call(server, 'GET', '/api/models/alice/target/yolo/files', { key: bobby }), 404);

  // Trash: gone everywhere, the name stays taken, the copies keep the shared weights.
  const deleted = await call(server, 'DELETE', '/api/models/alice/open/yolo', { key: alice });
  t.match(deleted.body, { success: true, model: 'yolo', daysRemaining: 30, deletedAt: /^\d{4}-/ });
  t.match(await em.fork().findOneOrFail(Model, yolo.id), { trashedWithProject: false, deletedAt: Date });
  expectError(t, await call(server, 'GET', '/api/models/alice/open/yolo', { key: alice }), 404);
  expectError(t, await call(server, 'GET', '/api/models/alice/open/yolo/files', { key: alice }), 404);
  expectError(t, await call(server, 'DELETE', '/api/models/alice/open/yolo', { key: alice }), 404);
  expectError(
    t,
    await call(server, 'POST', '/api/models', { key: alice, body: { project: 'open', model: 'yolo' } }),
    409,
    /in trash/,
  );
  t.same(
    (
      await call<{ models: Array<{ model: string }> }>(server, 'GET', '/api/models/alice/open', { key: alice })
    ).body.models.map((m) => m.model),
    ['named'],
  );
  t.same(
    Buffer.from(
      await (
        await fetch(
          (await call<Files>(server, 'GET', '/api/models/alice/target/yolo/files', { key: alice })).body.files[0]
            .downloadUrl,
        )
      ).arrayBuffer(),
    ),
    weights,
  );
});

t.test("a dataset's models leave out trashed ones", async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const datasetId = await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes' });
  await createProject(world, alice, { project: 'detector', name: 'Detector' });
  for (const model of ['kept', 'dropped']) await createModel(world, alice, { project: 'detector', model });
  const em = server.orm.em.fork();
  for (const model of await em.find(Model, { slug: { $in: ['kept', 'dropped'] } }))
    model.dataset = em.getReference(Dataset, datasetId);
  await em.flush();
  await call(server, 'DELETE', '/api/models/alice/detector/dropped', { key: alice });
  t.match((await call(server, 'GET', '/api/datasets/alice/shapes/models', { key: alice })).body, {
    models: [{ model: 'kept', project: 'detector' }],
    count: 1,
  });
});

t.test('reference URIs resolve with the access rules of their URLs', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  await createProject(world, alice, { project: 'open', name: 'Open', visibility: 'public' });
  await createProject(world, alice, { project: 'closed', name: 'Closed' });
  const open = await createModel(world, alice, { project: 'open', model: 'yolo' });
  const closed = await createModel(world, alice, { project: 'closed', model: 'yolo' });
  const datasetId = await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes' });
  const authenticator = new Authenticator(server.orm.em.fork() as never, server.log);
  const aliceActor = await authenticator.authenticate(alice);
  const bobbyActor = await authenticator.authenticate(world.bobby);
  const em = () => server.orm.em.fork() as never;

  t.equal((await resolveModelReference(em(), aliceActor, 'ul://alice/closed/yolo')).id, closed.id);
  t.equal((await resolveModelReference(em(), ANONYMOUS, 'ul://alice/open/yolo')).id, open.id);
  t.equal((await resolveDatasetReference(em(), aliceActor, 'ul://alice/datasets/shapes')).id, datasetId);
  const rejects = async (promise: Promise<unknown>, status: number, message: RegExp) => {
    const error = await promise.then(
      () => undefined,
      (caught: unknown) => caught as { status: number; message: string },
    );
    t.match(error, { status, message }, `${status} ${message}`);
  };
  await rejects(resolveModelReference(em(), bobbyActor, 'ul://alice/closed/yolo'), 404, /not found/);
  await rejects(resolveDatasetReference(em(), bobbyActor, 'ul://alice/datasets/shapes'), 404, /not found/);
  await rejects(resolveModelReference(em(), aliceActor, 'ul://alice/open/nope'), 404, /not found/);
  for (const bad of [
    'alice/open/yolo',
    'ul://alice/open',
    'ul://alice/open/yolo/extra',
    'ul://Alice/open/yolo',
    'ul://alice/open/Bad_Name',
    'https://alice/open/yolo',
  ]) {
    await rejects(resolveModelReference(em(), aliceActor, bad), 400, /ul:\/\/\{owner\}\/\{project\}\/\{model\}/);
  }
  await rejects(
    resolveDatasetReference(em(), aliceActor, 'ul://alice/open/yolo'),
    400,
    /ul:\/\/\{owner\}\/datasets\/\{dataset\}/,
  );
  await call(server, 'DELETE', '/api/projects/alice/open', { key: alice });
  await rejects(resolveModelReference(em(), ANONYMOUS, 'ul://alice/open/yolo'), 404, /not found/);
});
