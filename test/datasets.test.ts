// The Datasets API: create, list, read, update, rename, stars, trash and access rules, over real HTTP and PostgreSQL.
import t from 'tap';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

t.test('create: defaults, limits and conflicts', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const created = await call(server, 'POST', '/api/datasets', {
    key: alice,
    body: { dataset: 'shapes', name: 'Shapes', classNames: ['circle', 'square'] },
  });
  t.equal(created.status, 201);
  t.match(created.body, { id: /^[0-9a-f]{24}$/, owner: 'alice', dataset: 'shapes', region: 'us' });

  const read = await call<{ dataset: Record<string, unknown> }>(server, 'GET', '/api/datasets/alice/shapes', {
    key: alice,
  });
  t.equal(read.status, 200);
  t.match(read.body.dataset, {
    task: 'detect',
    format: 'yolo',
    visibility: 'private',
    classNames: ['circle', 'square'],
    classCount: 2,
    imageCount: 0,
    splits: { train: 0, val: 0, test: 0, labeled: 0 },
    versions: [],
    metadata: {},
    status: 'ready',
    isStarred: false,
    starCount: 0,
    region: 'us',
  });
  t.same(Object.keys(read.body.dataset.classColors as Record<string, string>), ['0', '1'], 'a colour per class index');
  const before = read.body.dataset.classColors as Record<string, string>;
  t.equal(
    (await call(server, 'PATCH', '/api/datasets/alice/shapes', { key: alice, body: { classColors: { 1: '#123456' } } }))
      .status,
    200,
    'colours by class index',
  );
  const recolored = await call<{ dataset: { classColors: Record<string, string> } }>(
    server,
    'GET',
    '/api/datasets/alice/shapes',
    { key: alice },
  );
  t.same(recolored.body.dataset.classColors, { 0: before['0'], 1: '#123456' }, 'only the class named changes colour');
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/shapes', { key: alice, body: { classColors: { 2: '#123456' } } }),
    400,
    /classColors.2: the dataset has 2 classes/,
  );

  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'shapes', name: 'Again' } }),
    409,
    /already exists/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'Bad Slug', name: 'x' } }),
    400,
    /dataset/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'x', name: 'a'.repeat(101) } }),
    400,
    /name/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'x', name: 'x', task: 'track' } }),
    400,
    /task/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', tags: Array(51).fill('t') },
    }),
    400,
    /tags/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', classNames: ['Car', 'CAR'] },
    }),
    400,
    /classNames\[1\].*duplicates/,
  );
  // Names of 1-2 characters keep their case.
  t.equal(
    (
      await call(server, 'POST', '/api/datasets', {
        key: alice,
        body: { dataset: 'letters', name: 'L', classNames: ['a', 'A'] },
      })
    ).status,
    201,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', classNames: Array.from({ length: 25_001 }, (_, i) => `c${i}`) },
    }),
    400,
    /classNames/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', metadata: { ['k'.repeat(129)]: 1 } },
    }),
    400,
    /128/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', metadata: { big: 'x'.repeat(500_001) } },
    }),
    400,
    /500000/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', {
      key: alice,
      body: { dataset: 'x', name: 'x', task: 'depth', classNames: ['a'] },
    }),
    400,
    /depth/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'x', name: 'x', owner: 'acme-team' } }),
    403,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: world.viewer, body: { dataset: 'x', name: 'x' } }),
    403,
    'Permission denied for this operation',
  );
  expectError(t, await call(server, 'POST', '/api/datasets', { body: { dataset: 'x', name: 'x' } }), 401);
  t.equal(
    (
      await call(server, 'POST', '/api/datasets', {
        key: world.editor,
        body: { dataset: 'team-set', name: 'T', owner: 'acme-team' },
      })
    ).status,
    201,
  );

  // A rejected request changed nothing.
  const list = await call<{ datasets: Array<{ dataset: string }>; total: number }>(
    server,
    'GET',
    '/api/datasets/alice',
    { key: alice },
  );
  t.same(list.body.datasets.map((d) => d.dataset).sort(), ['letters', 'shapes']);
  const summary = await call<{ counts: { datasets: number } }>(server, 'GET', '/api/account/summary', { key: alice });
  t.equal(summary.body.counts.datasets, 2);
});

t.test('list and read: visibility, limits, samples', async (t) => {
  const world = await startWorld(t);
  const { server, alice, bobby } = world;
  const publicId = await createDataset(world, alice, { dataset: 'open', name: 'Open', visibility: 'public' });
  await createDataset(world, alice, { dataset: 'closed', name: 'Closed' });
  const image = await shapeImage();
  await server.services().imageIntake.add(publicId, [{ bytes: image.bytes, filename: image.filename }]);

  const own = await call<{
    datasets: Array<{ dataset: string; samples: Array<{ thumbnailUrl: string }> }>;
    total: number;
    region: string;
  }>(server, 'GET', '/api/datasets/alice', { key: alice });
  t.equal(own.body.total, 2);
  t.equal(own.body.region, 'us');
  const open = own.body.datasets.find((d) => d.dataset === 'open');
  t.equal(open?.samples.length, 1);
  const thumbnail = await fetch(open!.samples[0].thumbnailUrl);
  t.equal(thumbnail.status, 200, 'sample thumbnails are signed, working URLs');
  t.equal(thumbnail.headers.get('content-type'), 'image/webp');

  for (const [who, key] of [
    ['stranger', bobby],
    ['anonymous', undefined],
  ] as const) {
    const seen = await call<{ datasets: Array<{ dataset: string }>; total: number }>(
      server,
      'GET',
      '/api/datasets/alice',
      { key },
    );
    t.same(
      seen.body.datasets.map((d) => d.dataset),
      ['open'],
      `${who} sees only public datasets`,
    );
    t.equal((await call(server, 'GET', '/api/datasets/alice/open', { key })).status, 200);
    expectError(t, await call(server, 'GET', '/api/datasets/alice/closed', { key }), 404);
  }
  const noSamples = await call<{ datasets: Array<Record<string, unknown>> }>(
    server,
    'GET',
    '/api/datasets/alice?includeSamples=false',
    { key: alice },
  );
  t.notOk('samples' in noSamples.body.datasets[0]);
  const withUrls = await call<{ datasets: Array<{ samples: Array<{ imageUrl?: string }> }> }>(
    server,
    'GET',
    '/api/datasets/alice?includeImageUrls=true',
    { key: alice },
  );
  t.ok(withUrls.body.datasets.some((d) => d.samples[0]?.imageUrl));
  expectError(t, await call(server, 'GET', '/api/datasets/alice?limit=1001', { key: alice }), 400, /limit/);
  t.equal(
    (await call<{ datasets: unknown[] }>(server, 'GET', '/api/datasets/alice?limit=1', { key: alice })).body.datasets
      .length,
    1,
  );
  expectError(t, await call(server, 'GET', '/api/datasets/nobody-here', { key: alice }), 404);
  // Team datasets: the viewer reads them; keys of other workspaces do not see private ones.
  await createDataset(world, world.team, { dataset: 'team-private', name: 'TP' });
  t.equal((await call(server, 'GET', '/api/datasets/acme-team/team-private', { key: world.viewer })).status, 200);
  expectError(t, await call(server, 'GET', '/api/datasets/acme-team/team-private', { key: alice }), 404);
});

t.test('update: fields, rename, class names, stars, trash', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  await createDataset(world, alice, { dataset: 'shapes', name: 'Shapes' });
  const patched = await call(server, 'PATCH', '/api/datasets/alice/shapes', {
    key: alice,
    body: {
      description: 'd',
      visibility: 'public',
      tags: ['a'],
      license: 'MIT',
      iconColor: '#fff',
      iconLetter: 'S',
      blurFaces: true,
      metadata: { source: 'cam' },
      format: 'coco',
      task: 'segment',
    },
  });
  t.same(patched.body, { success: true, dataset: 'shapes' });
  const read = await call<{ dataset: Record<string, unknown> }>(server, 'GET', '/api/datasets/alice/shapes', {
    key: alice,
  });
  t.match(read.body.dataset, {
    description: 'd',
    visibility: 'public',
    tags: ['a'],
    license: 'MIT',
    iconLetter: 'S',
    blurFaces: true,
    metadata: { source: 'cam' },
    format: 'coco',
    task: 'segment',
  });
  await call(server, 'PATCH', '/api/datasets/alice/shapes', { key: alice, body: { metadata: {} } });
  t.same(
    (await call<{ dataset: { metadata: unknown } }>(server, 'GET', '/api/datasets/alice/shapes', { key: alice })).body
      .dataset.metadata,
    {},
    '{} clears metadata',
  );

  const renamed = await call(server, 'PATCH', '/api/datasets/alice/shapes', {
    key: alice,
    body: { name: 'Road Signs 2' },
  });
  t.same(renamed.body, { success: true, dataset: 'road-signs-2' });
  expectError(t, await call(server, 'GET', '/api/datasets/alice/shapes', { key: alice }), 404);
  t.equal(
    (await call<{ dataset: { name: string } }>(server, 'GET', '/api/datasets/alice/road-signs-2', { key: alice })).body
      .dataset.name,
    'Road Signs 2',
  );
  await createDataset(world, alice, { dataset: 'other', name: 'Other' });
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', { key: alice, body: { name: 'road signs 2' } }),
    409,
  );

  // Class names: initialize once, rename and append, never drop silently.
  t.equal(
    (
      await call(server, 'PATCH', '/api/datasets/alice/other', {
        key: alice,
        body: { initializeClassNames: ['cat', 'dog'] },
      })
    ).status,
    200,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', { key: alice, body: { initializeClassNames: ['x'] } }),
    409,
  );
  t.equal(
    (
      await call(server, 'PATCH', '/api/datasets/alice/other', {
        key: alice,
        body: { classNames: ['Cat', 'dog', 'bird'] },
      })
    ).status,
    200,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', { key: alice, body: { classNames: ['cat'] } }),
    400,
    /classNames/,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', {
      key: alice,
      body: { classNames: ['cat', 'dog', 'DOG'] },
    }),
    400,
    /duplicates/,
  );
  t.same(
    (await call<{ dataset: { classNames: string[] } }>(server, 'GET', '/api/datasets/alice/other', { key: alice })).body
      .dataset.classNames,
    ['Cat', 'dog', 'bird'],
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', { key: alice, body: { unknownField: 1 } }),
    400,
  );
  expectError(t, await call(server, 'PATCH', '/api/datasets/alice/other', { key: alice, body: {} }), 400);

  // Stars: any reader, for themselves; counts stay exact under repeats.
  for (const key of [alice, world.bobby, world.bobby])
    await call(server, 'PATCH', '/api/datasets/alice/road-signs-2', { key, body: { starred: true } });
  const starred = await call<{ dataset: { starCount: number; isStarred: boolean } }>(
    server,
    'GET',
    '/api/datasets/alice/road-signs-2',
    { key: world.bobby },
  );
  t.match(starred.body.dataset, { starCount: 2, isStarred: true });
  await call(server, 'PATCH', '/api/datasets/alice/road-signs-2', { key: world.bobby, body: { starred: false } });
  t.match((await call(server, 'GET', '/api/datasets/alice/road-signs-2', { key: world.bobby })).body, {
    dataset: { starCount: 1, isStarred: false },
  });
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/road-signs-2', {
      key: world.bobby,
      body: { description: 'mine' },
    }),
    403,
  );
  expectError(
    t,
    await call(server, 'PATCH', '/api/datasets/alice/other', { key: world.bobby, body: { starred: true } }),
    404,
  );

  // Trash: gone from every endpoint, slug still taken.
  const deleted = await call(server, 'DELETE', '/api/datasets/alice/other', { key: alice });
  t.match(deleted.body, { success: true, dataset: 'other', daysRemaining: 30 });
  expectError(t, await call(server, 'GET', '/api/datasets/alice/other', { key: alice }), 404);
  expectError(
    t,
    await call(server, 'POST', '/api/datasets', { key: alice, body: { dataset: 'other', name: 'Again' } }),
    409,
    /in trash/,
  );
  t.same(
    (
      await call<{ datasets: Array<{ dataset: string }> }>(server, 'GET', '/api/datasets/alice', { key: alice })
    ).body.datasets.map((d) => d.dataset),
    ['road-signs-2'],
  );
  expectError(t, await call(server, 'DELETE', '/api/datasets/alice/road-signs-2', { key: world.bobby }), 403);
  t.same((await call(server, 'GET', '/api/datasets/alice/road-signs-2/models', { key: alice })).body, {
    models: [],
    count: 0,
  });
});

t.test('team roles: viewers read, editors write; splits redistribute', async (t) => {
  const world = await startWorld(t);
  const { server, viewer, editor } = world;
  const datasetId = await createDataset(world, world.team, {
    dataset: 'team-set',
    name: 'Team set',
    classNames: ['a'],
  });
  const images = await Promise.all(Array.from({ length: 20 }, () => shapeImage()));
  const ids = await server.services().imageIntake.add(
    datasetId,
    images.map((image) => ({ bytes: image.bytes, filename: image.filename })),
  );

  t.equal((await call(server, 'GET', '/api/datasets/acme-team/team-set/images', { key: viewer })).status, 200);
  t.equal((await call(server, 'GET', `/api/images/${ids[0]}`, { key: viewer })).status, 200);
  expectError(
    t,
    await call(server, 'PATCH', `/api/images/${ids[0]}`, { key: viewer, body: { labels: [] } }),
    403,
    'Permission denied for this operation',
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets/acme-team/team-set/splits/redistribute', {
      key: viewer,
      body: { train: 80, val: 10, test: 10 },
    }),
    403,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets/acme-team/team-set/classes/delete', {
      key: viewer,
      body: { classIds: [0] },
    }),
    403,
  );
  t.equal(
    (
      await call(server, 'PATCH', `/api/images/${ids[0]}`, {
        key: editor,
        body: { labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }] },
      })
    ).status,
    200,
  );

  expectError(
    t,
    await call(server, 'POST', '/api/datasets/acme-team/team-set/splits/redistribute', {
      key: editor,
      body: { train: 80, val: 10, test: 5 },
    }),
    400,
    /add up to 100/,
  );
  const redistributed = await call<{ splits: Record<string, number>; modified: number }>(
    server,
    'POST',
    '/api/datasets/acme-team/team-set/splits/redistribute',
    {
      key: editor,
      body: { train: 50, val: 25.5, test: 24.5 },
    },
  );
  t.same(redistributed.body.splits, { train: 10, val: 5, test: 5, labeled: 1 });
  t.ok(
    redistributed.body.modified >= 5 && redistributed.body.modified <= 10,
    'only images that changed split are counted (all started in train)',
  );
  const again = await call<{ modified: number; splits: Record<string, number> }>(
    server,
    'POST',
    '/api/datasets/acme-team/team-set/splits/redistribute',
    { key: editor, body: { train: 100, val: 0, test: 0 } },
  );
  t.same(again.body, { success: true, splits: { train: 20, val: 0, test: 0, labeled: 1 }, modified: 10 });

  expectError(
    t,
    await call(server, 'POST', '/api/datasets/acme-team/team-set/classes/merge', {
      key: editor,
      body: { sourceClassIds: [0], targetClassId: 0 },
    }),
    400,
    /targetClassId/,
  );
  expectError(
    t,
    await call(server, 'POST', '/api/datasets/acme-team/team-set/classes/delete', {
      key: editor,
      body: { classIds: [4] },
    }),
    400,
    /does not exist/,
  );
});
