// Dataset clone and image adoption: what is copied (rows, labels, classes, bytes), where bytes are stored
// and counted, class matching and mapping, moves, duplicates, and the refusals (403, 404, 409, 422, 400).
import t from 'tap';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage, type ShapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface ListedImage {
  id: string;
  name: string;
  split: string;
  labelCount: number;
  classIds: number[];
  imageUrl?: string;
  thumbnailUrl?: string | null;
  labels?: Array<{ classId: number; bbox?: number[] }>;
}

const CLASSES = ['square', 'circle', 'traffic light', 'pole'];

/**
 * A detect dataset of four classes: alpha (train, square), bravo (val, circle + traffic light + pole),
 * charlie (test, unlabeled).
 */
async function shapesDataset(world: World, key: string, owner: string, body: Record<string, unknown>) {
  const datasetId = await createDataset(world, key, { classNames: CLASSES, ...body });
  const a = await shapeImage({ name: 'alpha.png' });
  const b = await shapeImage({ name: 'bravo.png' });
  const c = await shapeImage({ name: 'charlie.png', format: 'jpeg' });
  const [alpha, bravo, charlie] = await world.server.services().imageIntake.add(datasetId, [
    {
      bytes: a.bytes,
      filename: a.filename,
      split: 'train',
      labels: [{ classId: 0, bbox: a.bbox }],
      metadata: { camera: 'north' },
    },
    {
      bytes: b.bytes,
      filename: b.filename,
      split: 'val',
      labels: [
        { classId: 1, bbox: b.bbox },
        { classId: 2, bbox: b.bbox },
        { classId: 3, bbox: b.bbox },
      ],
    },
    { bytes: c.bytes, filename: c.filename, split: 'test' },
  ]);
  return {
    datasetId,
    path: `/api/datasets/${owner}/${body.dataset as string}`,
    ids: { alpha, bravo, charlie },
    files: { a, b, c },
  };
}

const images = async (world: World, path: string, key: string) =>
  (
    await call<{ images: ListedImage[] }>(
      world.server,
      'GET',
      `${path}/images?sort=name-asc&includeLabels=true&includeImageUrls=true`,
      { key },
    )
  ).body.images;
const read = async (world: World, path: string, key: string) =>
  DatasetRead.parse((await call(world.server, 'GET', path, { key })).body).dataset;
const storedImageBytes = async (world: World, key: string) =>
  (await call<{ byKind: { datasetImages: number } }>(world.server, 'GET', '/api/storage', { key })).body.byKind
    .datasetImages;
const fetchBytes = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());
/** Name → [split, labels] of a listing: what a copy must keep. */
const content = (listed: ListedImage[]) => listed.map((image) => [image.name, image.split, image.labels]);

t.test('clone within the workspace: same content, no new bytes, URL names', async (t) => {
  const world = await startWorld(t);
  const source = await shapesDataset(world, world.alice, 'alice', {
    dataset: 'shapes',
    name: 'Shapes',
    visibility: 'public',
    tags: ['demo'],
    metadata: { site: 'lab' },
  });
  await call(world.server, 'PATCH', source.path, { key: world.alice, body: { classColors: ['#112233'] } });
  const storedBefore = await storedImageBytes(world, world.alice);

  const cloned = await call<Record<string, unknown>>(world.server, 'POST', `${source.path}/clone`, {
    key: world.alice,
  });
  t.equal(cloned.status, 201);
  t.match(cloned.body, {
    owner: 'alice',
    dataset: 'shapes-copy',
    name: 'Shapes (copy)',
    imageCount: 3,
    classCount: 4,
    region: 'us',
  });
  const copyPath = '/api/datasets/alice/shapes-copy';
  const [original, copy] = [await read(world, source.path, world.alice), await read(world, copyPath, world.alice)];
  t.match(copy, {
    visibility: 'private',
    task: 'detect',
    classNames: CLASSES,
    tags: ['demo'],
    metadata: { site: 'lab' },
    annotationCount: 4,
    splits: original.splits,
  });
  t.same(copy.classColors, original.classColors, 'class colours copied');
  t.same(copy.versions, [], 'versions are not copied');
  t.same(
    content(await images(world, copyPath, world.alice)),
    content(await images(world, source.path, world.alice)),
    'images, splits and labels equal',
  );
  t.equal(await storedImageBytes(world, world.alice), storedBefore, 'bytes are shared within the workspace');
  await checkDatasetInvariants(t, world.server, cloned.body.id as string);

  const second = await call(world.server, 'POST', `${source.path}/clone`, {
    key: world.alice,
    body: { name: 'Second', description: 'again', visibility: 'public', license: 'mit' },
  });
  t.match(second.body, { dataset: 'shapes-copy-2', name: 'Second' });
  t.match(await read(world, '/api/datasets/alice/shapes-copy-2', world.alice), {
    description: 'again',
    visibility: 'public',
    license: 'mit',
  });
  await call(world.server, 'DELETE', '/api/datasets/alice/shapes-copy-2', { key: world.alice });
  t.match(
    (await call(world.server, 'POST', `${source.path}/clone`, { key: world.alice })).body,
    { dataset: 'shapes-copy-3' },
    'a URL name in trash stays taken',
  );
  t.match(
    (await call(world.server, 'POST', `${source.path}/clone`, { key: world.alice, body: { dataset: 'chosen' } })).body,
    { dataset: 'chosen' },
  );
  expectError(
    t,
    await call(world.server, 'POST', `${source.path}/clone`, { key: world.alice, body: { dataset: 'shapes-copy' } }),
    409,
    /already exists/,
  );
  expectError(
    t,
    await call(world.server, 'POST', `${source.path}/clone`, { key: world.alice, body: { dataset: 'shapes-copy-2' } }),
    409,
    /in trash/,
  );
  expectError(
    t,
    await call(world.server, 'POST', `${source.path}/clone`, { key: world.alice, body: { owner: 'acme-team' } }),
    403,
  );
  expectError(t, await call(world.server, 'POST', `${source.path}/clone`, {}), 401);
  expectError(t, await call(world.server, 'POST', '/api/datasets/alice/nothing/clone', { key: world.alice }), 404);
});

t.test("clone of another workspace's public dataset: bytes copied and counted there", async (t) => {
  const world = await startWorld(t);
  const source = await shapesDataset(world, world.bobby, 'bobby', {
    dataset: 'open-shapes',
    name: 'Open shapes',
    visibility: 'public',
  });
  await createDataset(world, world.bobby, { dataset: 'secret', name: 'Secret' });
  t.equal(await storedImageBytes(world, world.alice), 0);

  const cloned = await call<Record<string, unknown>>(world.server, 'POST', `${source.path}/clone`, {
    key: world.alice,
    body: { owner: 'alice' },
  });
  t.equal(cloned.status, 201);
  t.match(cloned.body, { owner: 'alice', dataset: 'open-shapes-copy', imageCount: 3, classCount: 4 });
  const copyPath = '/api/datasets/alice/open-shapes-copy';
  t.same(content(await images(world, copyPath, world.alice)), content(await images(world, source.path, world.bobby)));
  t.equal(
    await storedImageBytes(world, world.alice),
    await storedImageBytes(world, world.bobby),
    "the files and thumbnails are stored once more for alice's workspace",
  );
  await checkDatasetInvariants(t, world.server, cloned.body.id as string);

  // The source's files go away; the copy's stay, under alice's workspace.
  const gone = await call(world.server, 'DELETE', '/api/images/bulk', {
    key: world.bobby,
    body: { imageIds: Object.values(source.ids) },
  });
  t.equal(gone.status, 200);
  t.equal(await storedImageBytes(world, world.bobby), 0);
  const files: Record<string, ShapeImage> = {
    'alpha.png': source.files.a,
    'bravo.png': source.files.b,
    'charlie.png': source.files.c,
  };
  for (const image of await images(world, copyPath, world.alice)) {
    t.same(
      await fetchBytes(image.imageUrl!),
      files[image.name].bytes,
      `${image.name}: the clone's URL serves its bytes`,
    );
    t.equal((await fetch(image.thumbnailUrl!)).status, 200, `${image.name}: thumbnail served`);
  }

  expectError(
    t,
    await call(world.server, 'POST', '/api/datasets/bobby/secret/clone', { key: world.alice }),
    404,
    'Dataset bobby/secret not found',
  );
  expectError(t, await call(world.server, 'POST', `${source.path}/clone`, { key: world.viewer }), 403);
});

/** A second dataset of alice's to adopt into; returns its path and id. */
async function target(world: World, body: Record<string, unknown>) {
  const id = await createDataset(world, world.alice, body);
  return { id, path: `/api/datasets/alice/${body.dataset as string}` };
}

const adopt = (world: World, path: string, body: Record<string, unknown>, key = world.alice) =>
  call(world.server, 'POST', `${path}/images/adopt`, { key, body });

t.test('adopt: copies with labels and classMapping (index, new name, null), duplicates skipped', async (t) => {
  const world = await startWorld(t);
  const source = await shapesDataset(world, world.alice, 'alice', { dataset: 'shapes', name: 'Shapes' });
  const into = await target(world, { dataset: 'into', name: 'Into', classNames: ['Square', 'box'] });
  const storedBefore = await storedImageBytes(world, world.alice);
  const { alpha, bravo } = source.ids;

  expectError(
    t,
    await adopt(world, into.path, { imageIds: [bravo], classMapping: { circle: 7 } }),
    400,
    /classMapping: "circle" → 7, but the dataset has 2 classes/,
  );
  const adopted = await adopt(world, into.path, {
    imageIds: [alpha, bravo, alpha],
    classMapping: { CIRCLE: 1, 'traffic light': 'lamp', pole: null },
  });
  t.equal(adopted.status, 200);
  t.same(adopted.body, { adopted: 2, skipped: 0 }, 'a repeated ID counts once');
  const dataset = await read(world, into.path, world.alice);
  t.same(dataset.classNames, ['Square', 'box', 'lamp'], '"square" matched "Square"; the mapping added "lamp"');
  t.match(dataset, { imageCount: 2, annotationCount: 3, splits: { train: 1, val: 1, test: 0, labeled: 2 } });
  const bbox = (file: ShapeImage) => file.bbox.map((v) => Math.round(v * 1e5) / 1e5);
  t.same(
    (await images(world, into.path, world.alice)).map((image) => [image.name, image.split, image.labels]),
    [
      ['alpha.png', 'train', [{ classId: 0, bbox: bbox(source.files.a) }]],
      [
        'bravo.png',
        'val',
        [
          { classId: 1, bbox: bbox(source.files.b) },
          { classId: 2, bbox: bbox(source.files.b) },
        ],
      ],
    ],
    'labels remapped (pole dropped), splits kept',
  );
  t.match(
    await read(world, source.path, world.alice),
    { imageCount: 3, annotationCount: 4 },
    'a copy leaves the source as it was',
  );
  t.equal(await storedImageBytes(world, world.alice), storedBefore, 'no bytes stored within the workspace');
  await checkDatasetInvariants(t, world.server, into.id);

  t.same(
    (
      await adopt(world, into.path, {
        imageIds: [alpha, bravo],
        classMapping: { circle: 1, 'traffic light': 'lamp', pole: null },
      })
    ).body,
    { adopted: 0, skipped: 2 },
    'already there',
  );
});

t.test(
  'adopt without release or classMapping: unlabeled train images, also from public datasets of others',
  async (t) => {
    const world = await startWorld(t);
    const own = await shapesDataset(world, world.alice, 'alice', { dataset: 'shapes', name: 'Shapes' });
    const open = await shapesDataset(world, world.bobby, 'bobby', {
      dataset: 'open-shapes',
      name: 'Open',
      visibility: 'public',
    });
    const into = await target(world, { dataset: 'into', name: 'Into', task: 'segment' });

    const adopted = await adopt(world, into.path, { imageIds: [own.ids.bravo, own.ids.charlie, open.ids.alpha] });
    t.same(adopted.body, { adopted: 3, skipped: 0 });
    t.match(
      await read(world, into.path, world.alice),
      { imageCount: 3, annotationCount: 0, classNames: [], splits: { train: 3, val: 0, test: 0, labeled: 0 } },
      'the task may differ: nothing of the labels is kept',
    );
    const alpha = (await images(world, into.path, world.alice)).find((image) => image.name === 'alpha.png');
    t.same(await fetchBytes(alpha!.imageUrl!), open.files.a.bytes, "bobby's image is served from alice's workspace");
    await checkDatasetInvariants(t, world.server, into.id);

    // classMapping keeps labels only from datasets the key can edit: bobby's image still arrives unlabeled.
    const labeled = await target(world, { dataset: 'labeled', name: 'Labeled', classNames: CLASSES });
    t.same((await adopt(world, labeled.path, { imageIds: [own.ids.alpha, open.ids.bravo], classMapping: {} })).body, {
      adopted: 2,
      skipped: 0,
    });
    t.same(
      (await images(world, labeled.path, world.alice)).map((image) => [image.name, image.split, image.labelCount]),
      [
        ['alpha.png', 'train', 1],
        ['bravo.png', 'train', 0],
      ],
    );
    await checkDatasetInvariants(t, world.server, labeled.id);
  },
);

t.test('copy with an explicit release false: labels and splits are kept, the sources keep their images', async (t) => {
  const world = await startWorld(t);
  const own = await shapesDataset(world, world.alice, 'alice', { dataset: 'shapes', name: 'Shapes' });
  const into = await target(world, { dataset: 'into', name: 'Into', classNames: CLASSES });
  t.same(
    (await adopt(world, into.path, { imageIds: [own.ids.alpha, own.ids.bravo, own.ids.charlie], release: false })).body,
    { adopted: 3, skipped: 0 },
  );
  t.same(
    (await images(world, into.path, world.alice))
      .toSorted((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((image) => [image.name, image.split, image.labelCount]),
    [
      ['alpha.png', 'train', 1],
      ['bravo.png', 'val', 3],
      ['charlie.png', 'test', 0],
    ],
  );
  t.match(
    await read(world, own.path, world.alice),
    { imageCount: 3, annotationCount: 4 },
    'a copy leaves the source as it was',
  );
  await checkDatasetInvariants(t, world.server, into.id);
});

t.test('move with release: sources lose the images, the destination gains them', async (t) => {
  const world = await startWorld(t);
  const first = await shapesDataset(world, world.alice, 'alice', { dataset: 'first', name: 'First' });
  const second = await shapesDataset(world, world.alice, 'alice', { dataset: 'second', name: 'Second' });
  const into = await target(world, { dataset: 'into', name: 'Into', classNames: CLASSES });
  const open = await shapesDataset(world, world.bobby, 'bobby', {
    dataset: 'open-shapes',
    name: 'Open',
    visibility: 'public',
  });

  const moved = await adopt(world, into.path, {
    imageIds: [first.ids.alpha, first.ids.bravo, second.ids.bravo],
    release: true,
  });
  t.same(moved.body, { adopted: 3, skipped: 0 });
  t.match(await read(world, first.path, world.alice), {
    imageCount: 1,
    annotationCount: 0,
    splits: { train: 0, val: 0, test: 1, labeled: 0 },
  });
  t.match(await read(world, second.path, world.alice), {
    imageCount: 2,
    annotationCount: 1,
    splits: { train: 1, val: 0, test: 1, labeled: 1 },
  });
  t.match(await read(world, into.path, world.alice), {
    imageCount: 3,
    annotationCount: 7,
    classNames: CLASSES,
    splits: { train: 1, val: 2, test: 0, labeled: 3 },
  });
  expectError(t, await call(world.server, 'GET', `/api/images/${first.ids.alpha}`, { key: world.alice }), 404);
  for (const id of [first.datasetId, second.datasetId, into.id]) await checkDatasetInvariants(t, world.server, id);

  // A file already in the destination split is skipped and stays in its dataset.
  const again = await shapesDataset(world, world.alice, 'alice', { dataset: 'third', name: 'Third' });
  const [{ hash }] = await query<{ hash: string }>(world.server.services().em, 'select hash from images where id = ?', [
    second.ids.alpha,
  ]);
  await query(world.server.services().em, 'update images set hash = ? where id = ?', [hash, again.ids.alpha]);
  t.same((await adopt(world, into.path, { imageIds: [second.ids.alpha, again.ids.alpha], release: true })).body, {
    adopted: 1,
    skipped: 1,
  });
  t.match(await read(world, again.path, world.alice), { imageCount: 3 }, 'the skipped image was not moved');

  expectError(
    t,
    await adopt(world, into.path, { imageIds: [open.ids.alpha], release: true }),
    403,
    /release: moving images out of bobby\/open-shapes needs editor access/,
  );
  t.match(await read(world, open.path, world.bobby), { imageCount: 3 });
});

t.test(
  'adopt refusals: 422 unmatched classes, 409 task, pose shape and busy, 403 viewer, 404 invisible, 400 too many',
  async (t) => {
    const world = await startWorld(t);
    const source = await shapesDataset(world, world.alice, 'alice', { dataset: 'shapes', name: 'Shapes' });
    const { alpha, bravo } = source.ids;

    const into = await target(world, { dataset: 'into', name: 'Into', classNames: ['Square', 'Pole'] });
    const unmatched = await adopt(world, into.path, { imageIds: [alpha, bravo], classMapping: {} });
    expectError(t, unmatched, 422, /2 classes of the images match no class/, ['unmatchedClasses']);
    t.same(unmatched.body.unmatchedClasses, ['circle', 'traffic light'], '"square" and "pole" matched by name');
    t.same(
      (await adopt(world, into.path, { imageIds: [alpha, bravo], classMapping: { circle: null, 'traffic light': 0 } }))
        .body,
      { adopted: 2, skipped: 0 },
    );
    t.same((await read(world, into.path, world.alice)).classNames, ['Square', 'Pole'], 'no class added');

    const segment = await target(world, { dataset: 'segment', name: 'Segment', task: 'segment', classNames: CLASSES });
    expectError(
      t,
      await adopt(world, segment.path, { imageIds: [alpha], release: true }),
      409,
      /are for detect, this dataset's task is segment/,
    );
    t.match(await read(world, source.path, world.alice), { imageCount: 3 }, 'nothing moved');

    const poseA = await target(world, { dataset: 'pose-a', name: 'Pose A', task: 'pose', classNames: ['person'] });
    const poseB = await target(world, { dataset: 'pose-b', name: 'Pose B', task: 'pose', classNames: ['person'] });
    await call(world.server, 'PATCH', poseA.path, { key: world.alice, body: { kptShape: [17, 3] } });
    await call(world.server, 'PATCH', poseB.path, { key: world.alice, body: { kptShape: [5, 2] } });
    const pose = await shapeImage();
    const [poseImage] = await world.server
      .services()
      .imageIntake.add(poseA.id, [{ bytes: pose.bytes, filename: 'pose.png' }]);
    expectError(t, await adopt(world, poseB.path, { imageIds: [poseImage], classMapping: {} }), 409, /shape \[17,3\]/);

    const em = world.server.services().em;
    await query(
      em,
      `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status) select ?, now(), now(), workspace_id, 'ingest', id, 'running' from datasets where id = ?`,
      ['b'.repeat(24), into.id],
    );
    expectError(t, await adopt(world, into.path, { imageIds: [source.ids.charlie] }), 409, /alice\/into is busy/);
    await query(em, `update jobs set status = 'completed' where id = ?`, ['b'.repeat(24)]);

    const team = await createDataset(world, world.team, {
      dataset: 'team-set',
      name: 'Team set',
      visibility: 'public',
    });
    t.ok(team);
    expectError(t, await adopt(world, '/api/datasets/acme-team/team-set', { imageIds: [alpha] }, world.viewer), 403);
    expectError(
      t,
      await adopt(world, '/api/datasets/acme-team/team-set', { imageIds: [alpha] }, world.editor),
      404,
      '1 of the images were not found',
    );
    expectError(
      t,
      await adopt(world, into.path, { imageIds: ['0'.repeat(24)] }),
      404,
      '1 of the 1 images were not found',
    );
    expectError(
      t,
      await adopt(world, into.path, { imageIds: Array.from({ length: 1001 }, () => alpha) }),
      400,
      /imageIds/,
    );
    expectError(t, await adopt(world, into.path, { imageIds: [] }), 400, /imageIds/);
    expectError(t, await adopt(world, into.path, { imageIds: [alpha] }, world.bobby), 404);
  },
);
