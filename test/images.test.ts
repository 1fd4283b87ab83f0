// The Images API: reads, label and metadata edits, deletes, split moves, signed URLs and the list's
// filters, sorts and pages, on images drawn with sharp whose labels are known exactly.
import { createHash } from 'node:crypto';
import sharp from 'sharp';
import t from 'tap';
import type { z } from 'zod';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { sweepOrphanImageBlobs } from '../control-plane/src/images/image-blobs.ts';
import { decodeImage } from '../control-plane/src/images/image-decode.ts';
import { ImageDetail, ImagePatched } from '../control-plane/src/images/image.schemas.ts';
import { storeImageFiles } from '../control-plane/src/images/image-intake.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface ListedImage {
  id: string;
  name: string;
  split: string;
  labelCount: number;
  classIds: number[];
  width: number;
  height: number;
  bytes: number;
  thumbnailUrl?: string | null;
  imageUrl?: string;
  labels?: unknown[];
  error: string | null;
}
interface Listing {
  images: ListedImage[];
  total: number | null;
  hasMore: boolean;
  nextCursor: string | null;
  errorCount: number;
  classes: string[];
  classColors: Record<string, string>;
}

async function shapesDataset(world: World) {
  const datasetId = await createDataset(world, world.alice, {
    dataset: 'shapes',
    name: 'Shapes',
    classNames: ['square', 'circle', 'traffic light'],
  });
  const intake = world.server.services().imageIntake;
  const a = await shapeImage({ width: 100, height: 50, name: 'alpha.png' });
  const b = await shapeImage({ width: 40, height: 80, name: 'bravo.png', format: 'jpeg' });
  const c = await shapeImage({ width: 60, height: 60, name: 'charlie.png' });
  const ids = await intake.add(datasetId, [
    {
      bytes: a.bytes,
      filename: a.filename,
      split: 'train',
      labels: [{ classId: 0, bbox: a.bbox }],
      metadata: { camera: 'north-gate' },
    },
    {
      bytes: b.bytes,
      filename: b.filename,
      split: 'val',
      labels: [
        { classId: 1, bbox: b.bbox },
        { classId: 2, bbox: b.bbox },
      ],
    },
    { bytes: c.bytes, filename: c.filename, split: 'test' },
  ]);
  return { datasetId, ids, files: { a, b, c } };
}

const list = (world: World, query = '', key = world.alice) =>
  call<Listing>(world.server, 'GET', `/api/datasets/alice/shapes/images${query}`, { key });

t.test('list: filters, sorts, totals, extras', async (t) => {
  const world = await startWorld(t);
  const { ids } = await shapesDataset(world);
  const [alpha, bravo, charlie] = ids;
  const all = await list(world);
  t.equal(all.status, 200);
  t.same(
    all.body.images.map((i) => i.name),
    ['charlie.png', 'bravo.png', 'alpha.png'],
    'newest first',
  );
  t.match(all.body, { total: 3, hasMore: false, nextCursor: null, errorCount: 0 });
  t.same(all.body.classes, ['square', 'circle', 'traffic light'], 'class names in index order');
  t.same(Object.keys(all.body.classColors), ['0', '1', '2'], 'a colour for every class index');
  t.match(all.body.images[1], {
    id: bravo,
    width: 40,
    height: 80,
    split: 'val',
    labelCount: 2,
    classIds: [1, 2],
    error: null,
  });
  t.ok(all.body.images[0].thumbnailUrl);
  t.notOk(all.body.images[0].imageUrl);

  const names = async (query: string) => {
    const { body } = await list(world, query);
    t.equal(body.total, body.images.length, `the total of ${query || 'all'} is the images it lists`);
    return body.images.map((i) => i.name);
  };
  t.same(await names('?sort=oldest'), ['alpha.png', 'bravo.png', 'charlie.png']);
  t.same(await names('?sort=name-desc'), ['charlie.png', 'bravo.png', 'alpha.png']);
  t.same(await names('?sort=width-asc'), ['bravo.png', 'charlie.png', 'alpha.png']);
  t.same(await names('?sort=height-desc'), ['bravo.png', 'charlie.png', 'alpha.png']);
  t.same(await names('?sort=labels-desc'), ['bravo.png', 'alpha.png', 'charlie.png']);
  const sizes = (await list(world, '?sort=size-asc')).body.images.map((i) => i.bytes);
  t.same(
    sizes,
    [...sizes].sort((x, y) => x - y),
  );
  t.same(await names('?split=val'), ['bravo.png']);
  t.same(await names('?hasLabel=false'), ['charlie.png']);
  t.same(await names('?hasLabel=true&sort=oldest'), ['alpha.png', 'bravo.png']);
  t.same(await names('?classIds=0,2&sort=oldest'), ['alpha.png', 'bravo.png']);
  t.same(await names('?classIds=2'), ['bravo.png']);
  t.same(await names('?search=CHAR'), ['charlie.png'], 'search: file name, case ignored');
  t.same(await names('?search=north'), ['alpha.png'], 'search: custom metadata');
  t.same(await names('?search=light'), ['bravo.png'], 'search: class name');
  t.same(
    await names('?search=A&sort=oldest'),
    ['alpha.png', 'bravo.png', 'charlie.png'],
    'search: class and file names',
  );
  t.same(await names('?search=A&hasLabel=false'), ['charlie.png'], 'search: file name of an image without labels');
  t.same(await names('?search=circ&classIds=2'), ['bravo.png'], 'search: class name, among a class');
  t.same(await names('?search=100%25'), [], 'LIKE wildcards are literal');
  t.same(await names(`?q=${bravo}`), ['bravo.png'], 'q: an image ID');
  t.same(await names('?q=alpha.png'), ['alpha.png']);
  t.equal((await list(world, '?split=val&hasLabel=true')).body.total, 1);
  t.notOk('total' in (await list(world, '?includeTotal=false')).body, 'no total with includeTotal=false');
  const extras = await list(world, '?includeImageUrls=true&includeThumbnails=false&includeLabels=true&sort=oldest');
  t.notOk('thumbnailUrl' in extras.body.images[0]);
  t.same(extras.body.images[1].labels?.length, 2);
  const original = await fetch(extras.body.images[0].imageUrl!);
  t.equal(original.status, 200);
  t.equal(
    Buffer.from(await original.arrayBuffer()).length,
    extras.body.images[0].bytes,
    'the signed URL serves the stored bytes',
  );

  expectError(t, await list(world, '?limit=5001'), 400, /limit/);
  expectError(t, await list(world, '?sort=random'), 400, /sort/);
  expectError(t, await list(world, '?split=holdout'), 400, /split/);
  expectError(t, await list(world, '?classIds=a'), 400, /classIds/);
  expectError(t, await list(world, `?search=${'x'.repeat(201)}`), 400, /search/);
  expectError(t, await list(world, `?cursor=${'0'.repeat(24)}`), 400, /cursor/);

  const selected = await call<Listing>(world.server, 'POST', '/api/datasets/alice/shapes/images?sort=oldest', {
    key: world.alice,
    body: { imageIds: [charlie, alpha, '0'.repeat(24)] },
  });
  t.same(
    selected.body.images.map((i) => i.id),
    [alpha, charlie],
  );
  t.equal(selected.body.total, 2);
  expectError(
    t,
    await call(world.server, 'POST', '/api/datasets/alice/shapes/images', {
      key: world.alice,
      body: { imageIds: Array(1001).fill(alpha) },
    }),
    400,
    /imageIds/,
  );

  // Private: strangers and anonymous callers get 404; once public they can list.
  expectError(t, await list(world, '', world.bobby), 404);
  await call(world.server, 'PATCH', '/api/datasets/alice/shapes', { key: world.alice, body: { visibility: 'public' } });
  t.equal((await call<Listing>(world.server, 'GET', '/api/datasets/alice/shapes/images')).body.total, 3);
});

t.test('filtered totals stay exact as the counts kept per class set grow and are compacted', async (t) => {
  const world = await startWorld(t);
  const { datasetId, ids } = await shapesDataset(world);
  const em = world.server.services().em;
  const rows = async () =>
    (
      await query<{ n: number }>(em, 'select count(*)::int as n from image_class_sets where dataset_id = ?', [
        datasetId,
      ])
    )[0]!.n;
  // Every statement on images adds rows: 600 split moves of one image, whatever wrote them (here plain SQL).
  for (let move = 0; move < 600; move++) {
    await query(em, `update images set split = case when split = 'train' then 'val' else 'train' end where id = ?`, [
      ids[0],
    ]);
  }
  t.ok((await rows()) > 1000, 'each statement added its change');
  const listed = await list(world, '?classIds=0&split=train');
  t.equal(listed.body.total, 1, 'summed: the image is back in train after an even number of moves');
  t.equal(listed.body.images.length, 1);
  t.ok((await rows()) <= 3, 'the read compacted them: one row per split, labeled and class set');
  t.equal((await list(world, '?classIds=0&split=val')).body.total, 0, 'and they still add up');
});
t.test('read, label edits, metadata, delete', async (t) => {
  const world = await startWorld(t);
  const { ids, files } = await shapesDataset(world);
  const [alpha, bravo, charlie] = ids;
  const read = await call<z.output<typeof ImageDetail>>(world.server, 'GET', `/api/images/${alpha}`, {
    key: world.alice,
  });
  t.equal(read.status, 200);
  t.match(read.body, {
    id: alpha,
    metadata: { camera: 'north-gate' },
    properties: { filename: 'alpha.png', width: 100, height: 50, split: 'train', labelCount: 1 },
    classNames: ['square', 'circle', 'traffic light'],
  });
  t.same(read.body.labels, [{ classId: 0, bbox: files.a.bbox.map((v) => Math.round(v * 1e5) / 1e5) }]);
  const bytes = Buffer.from(await (await fetch(read.body.imageUrl)).arrayBuffer());
  t.same(bytes, files.a.bytes, 'the image URL serves the original bytes');
  expectError(
    t,
    await call(world.server, 'GET', `/api/images/${alpha}`, { key: world.bobby }),
    404,
    `Image ${alpha} not found`,
  );
  expectError(t, await call(world.server, 'GET', `/api/images/${'f'.repeat(24)}`, { key: world.alice }), 404);
  expectError(t, await call(world.server, 'GET', '/api/images/nope', { key: world.alice }), 400);

  const saved = await call<z.output<typeof ImagePatched>>(world.server, 'PATCH', `/api/images/${charlie}`, {
    key: world.alice,
    body: {
      labels: [
        { classId: 2, bbox: [0.5, 0.5, 0.1234567, 0.2] },
        { classId: 0, bbox: [0.25, 0.25, 0.1, 0.1] },
      ],
    },
  });
  t.equal(saved.status, 200);
  t.same(saved.body.labels![0].bbox, [0.5, 0.5, 0.12346, 0.2], 'saved rounded to 5 decimals');
  const counts = async () =>
    (
      await call<z.output<typeof DatasetRead>>(world.server, 'GET', '/api/datasets/alice/shapes', {
        key: world.alice,
      })
    ).body.dataset;
  t.match(await counts(), { imageCount: 3, annotationCount: 5, splits: { train: 1, val: 1, test: 1, labeled: 3 } });
  expectError(
    t,
    await call(world.server, 'PATCH', `/api/images/${charlie}`, {
      key: world.alice,
      body: {
        labels: [
          { classId: 0, bbox: [0.5, 0.5, 0.1, 0.1] },
          { classId: 3, bbox: [0.5, 0.5, 0.1, 0.1] },
        ],
      },
    }),
    400,
    /labels\[1\]\.classId: 3 is out of range/,
  );
  expectError(
    t,
    await call(world.server, 'PATCH', `/api/images/${charlie}`, {
      key: world.alice,
      body: { labels: [{ classId: 0, bbox: [0.5, 1.5, 0.1, 0.1] }] },
    }),
    400,
    /labels\[0\]\.bbox\[1\]/,
  );
  expectError(
    t,
    await call(world.server, 'PATCH', `/api/images/${charlie}`, {
      key: world.alice,
      body: { labels: [{ classId: 0, segments: [0.1, 0.1, 0.2, 0.2, 0.3, 0.1] }] },
    }),
    400,
    /segments: not used by detect/,
  );
  expectError(
    t,
    await call(world.server, 'PATCH', `/api/images/${charlie}`, {
      key: world.alice,
      body: { labels: [], metadata: {} },
    }),
    400,
    /not both/,
  );
  expectError(
    t,
    await call(world.server, 'PATCH', `/api/images/${charlie}`, { key: world.viewer, body: { labels: [] } }),
    404,
  );
  t.match(await counts(), { annotationCount: 5 }, 'refused edits changed nothing');

  await call(world.server, 'PATCH', `/api/images/${charlie}`, {
    key: world.alice,
    body: { metadata: { weather: 'Foggy' } },
  });
  t.same(
    (await list(world, '?search=fog')).body.images.map((i) => i.id),
    [charlie],
  );
  await call(world.server, 'PATCH', `/api/images/${charlie}`, { key: world.alice, body: { labels: [] } });
  t.match(await counts(), { annotationCount: 3, splits: { labeled: 2 } });

  const deleted = await call(world.server, 'DELETE', `/api/images/${bravo}`, { key: world.alice });
  t.same(deleted.body, { success: true, id: bravo, deletedImageId: bravo, deletedCount: 1 });
  expectError(t, await call(world.server, 'GET', `/api/images/${bravo}`, { key: world.alice }), 404);
  expectError(t, await call(world.server, 'DELETE', `/api/images/${bravo}`, { key: world.alice }), 404);
  t.match(await counts(), { imageCount: 2, annotationCount: 1, splits: { train: 1, val: 0, test: 1, labeled: 1 } });
  const storage = await call<{ byKind: { datasetImages: number } }>(world.server, 'GET', '/api/storage', {
    key: world.alice,
  });
  const stored = files.a.bytes.length + files.c.bytes.length;
  t.ok(
    storage.body.byKind.datasetImages > stored && storage.body.byKind.datasetImages < stored * 2,
    'a deleted image no longer counts in storage (thumbnails do)',
  );
});

t.test('bulk moves with conflicts, bulk delete, signed URLs', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'shapes', name: 'Shapes' });
  const intake = world.server.services().imageIntake;
  const same = await shapeImage();
  const other = await shapeImage();
  const [trainCopy, valCopy, lone] = await intake.add(datasetId, [
    { bytes: same.bytes, filename: 'a.png', split: 'train' },
    { bytes: same.bytes, filename: 'a-again.png', split: 'val' },
    { bytes: other.bytes, filename: 'b.png', split: 'train' },
  ]);
  const move = (body: Record<string, unknown>) =>
    call(world.server, 'PATCH', '/api/images/bulk', { key: world.alice, body });
  expectError(t, await move({ imageIds: [trainCopy, lone], split: 'val' }), 409, /already in val/, ['conflictCount']);
  const splits = async () =>
    (
      await call<{ dataset: { splits: Record<string, number> } }>(world.server, 'GET', '/api/datasets/alice/shapes', {
        key: world.alice,
      })
    ).body.dataset.splits;
  t.same(await splits(), { train: 2, val: 1, test: 0, labeled: 0 }, 'a refused move moved nothing');
  t.same((await move({ imageIds: [trainCopy, lone], split: 'val', conflictPolicy: 'skip' })).body, {
    success: true,
    modifiedCount: 1,
    skippedCount: 1,
    targetSplit: 'val',
  });
  t.same(await splits(), { train: 1, val: 2, test: 0, labeled: 0 });
  t.same((await move({ imageIds: [trainCopy], split: 'val', conflictPolicy: 'replace' })).body, {
    success: true,
    modifiedCount: 1,
    skippedCount: 0,
    targetSplit: 'val',
  });
  expectError(t, await call(world.server, 'GET', `/api/images/${valCopy}`, { key: world.alice }), 404);
  t.same(await splits(), { train: 0, val: 2, test: 0, labeled: 0 });
  t.same((await move({ imageIds: [lone], split: 'test', conflictPolicy: 'keep_both' })).body, {
    success: true,
    modifiedCount: 1,
    skippedCount: 0,
    targetSplit: 'test',
  });
  expectError(t, await move({ imageIds: ['0'.repeat(24)], split: 'val' }), 404);
  expectError(t, await move({ imageIds: [lone], split: 'holdout' }), 400);

  const otherSet = await createDataset(world, world.alice, { dataset: 'other', name: 'Other' });
  const [foreign] = await intake.add(otherSet, [{ bytes: (await shapeImage()).bytes, filename: 'f.png' }]);
  expectError(
    t,
    await call(world.server, 'POST', '/api/images/urls', { key: world.alice, body: { imageIds: [lone, foreign] } }),
    400,
    /one dataset/,
  );
  const urls = await call<{
    urls: Record<string, string>;
    thumbnails: Record<string, string>;
    depths: Record<string, unknown>;
  }>(world.server, 'POST', '/api/images/urls', { key: world.alice, body: { imageIds: [lone, trainCopy] } });
  t.same(Object.keys(urls.body.urls).sort(), [lone, trainCopy].sort());
  t.same(urls.body.depths, {}, 'images without a depth map have no depths entry (not null)');
  const thumb = await sharp(Buffer.from(await (await fetch(urls.body.thumbnails[lone])).arrayBuffer())).metadata();
  t.equal(thumb.format, 'webp');
  expectError(
    t,
    await call(world.server, 'POST', '/api/images/urls', {
      key: world.alice,
      body: { imageIds: Array(101).fill(lone) },
    }),
    400,
  );
  expectError(
    t,
    await call(world.server, 'POST', '/api/images/urls', { key: world.bobby, body: { imageIds: [lone] } }),
    404,
  );

  expectError(
    t,
    await call(world.server, 'DELETE', '/api/images/bulk', { key: world.bobby, body: { imageIds: [lone] } }),
    404,
  );
  const removed = await call<{ deletedCount: number; deletedImageIds: string[] }>(
    world.server,
    'DELETE',
    '/api/images/bulk',
    { key: world.alice, body: { imageIds: [lone, trainCopy] } },
  );
  t.equal(removed.body.deletedCount, 2);
  t.same([...removed.body.deletedImageIds].sort(), [lone, trainCopy].sort());
  t.same(await splits(), { train: 0, val: 0, test: 0, labeled: 0 });
});

t.test('images: EXIF orientation and undecodable files', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'shapes', name: 'Shapes' });
  // Stored 80x40 with orientation 6 (rotate 90°): shown 40 wide, 80 high.
  const rotated = await sharp({ create: { width: 80, height: 40, channels: 3, background: '#0f0' } })
    .jpeg()
    .withMetadata({ orientation: 6 })
    .toBuffer();
  const [upright, broken] = await world.server.services().imageIntake.add(datasetId, [
    { bytes: rotated, filename: 'phone.jpg' },
    { bytes: Buffer.from('not an image at all'), filename: 'broken.png' },
  ]);
  const listing = await list(world, '?sort=oldest');
  t.match(listing.body.images[0], { id: upright, width: 40, height: 80, error: null });
  const thumb = await sharp(
    Buffer.from(await (await fetch(listing.body.images[0].thumbnailUrl!)).arrayBuffer()),
  ).metadata();
  t.ok(thumb.height! > thumb.width!, 'the thumbnail is upright');
  t.match(listing.body.images[1], { id: broken, error: /Could not decode/, thumbnailUrl: null });
  t.equal(listing.body.errorCount, 1);
  t.same(
    (await list(world, '?hasError=true')).body.images.map((i) => i.id),
    [broken],
  );
  t.same(
    (await list(world, '?hasError=false')).body.images.map((i) => i.id),
    [upright],
  );
});

t.test('a refused intake stores nothing', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, {
    dataset: 'shapes',
    name: 'Shapes',
    classNames: ['square'],
  });
  const image = await shapeImage();
  await t.rejects(
    world.server
      .services()
      .imageIntake.add(datasetId, [
        { bytes: image.bytes, filename: 'a.png', labels: [{ classId: 1, bbox: image.bbox }] },
      ]),
    /classId: 1 is out of range/,
  );
  const storage = await call<{ totalBytes: number }>(world.server, 'GET', '/api/storage', { key: world.alice });
  t.equal(storage.body.totalBytes, 0, 'no stored bytes are counted');
  const blobs: string[] = [];
  for await (const entry of world.server.storage.store.list('ws/')) blobs.push(entry.key);
  t.same(blobs, [], 'and none are in the store');
  t.equal((await list(world)).body.total, 0);
});

t.test('the hourly sweep deletes image bytes nothing refers to, and only those', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'shapes', name: 'Shapes' });
  const kept = await shapeImage();
  await world.server.services().imageIntake.add(datasetId, [{ bytes: kept.bytes, filename: 'kept.png' }]);
  // Bytes stored by a process that died before recording their use.
  const lost = await shapeImage();
  const services = world.server.services();
  const [workspace] = await query<{ workspace_id: string }>(
    services.em,
    'select workspace_id from datasets where id = ?',
    [datasetId],
  );
  await storeImageFiles(
    services.em,
    services.storage,
    workspace.workspace_id,
    await decodeImage(lost.bytes, 'lost.png'),
    lost.bytes,
  );
  const keys = async () => {
    const found: string[] = [];
    for await (const entry of world.server.storage.store.list('ws/')) found.push(entry.key);
    return found.sort();
  };
  t.equal((await keys()).length, 4, 'two images, two thumbnails');
  t.equal(await sweepOrphanImageBlobs(services.em, services.storage), 0, 'young bytes are left alone');
  await query(services.em, `update stored_objects set created_at = now() - interval '2 days'`);
  t.equal(await sweepOrphanImageBlobs(services.em, services.storage), 1);
  const left = await keys();
  t.equal(left.length, 2);
  t.ok(
    left.every((key) => key.includes(createHash('sha256').update(kept.bytes).digest('hex'))),
    'what is left belongs to the image in the dataset',
  );
  t.equal((await list(world)).body.total, 1);
});
