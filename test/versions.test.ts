// Dataset exports and versions: the NDJSON of the current state (and its cache), numbered versions
// (reuse by content, descriptions, their own NDJSON), restore from a version, and the image bytes that
// versions keep alive.
import t from 'tap';
import type { z } from 'zod';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface NdjsonImage {
  type: 'image';
  file: string;
  url: string;
  width: number;
  height: number;
  split: string;
  annotations?: Record<string, unknown[]>;
  metadata?: Record<string, unknown>;
  hash: string;
}
interface Ndjson {
  header: Record<string, unknown>;
  images: NdjsonImage[];
}

const PATH = '/api/datasets/acme-team/parts';
const round = (box: number[]) => box.map((v) => Math.round(v * 1e5) / 1e5);

/** acme-team/parts: four images, oldest first; "same.png" twice (val, then train), labels on two. */
async function partsDataset(world: World) {
  const datasetId = await createDataset(world, world.editor, {
    dataset: 'parts',
    name: 'Parts',
    classNames: ['bolt', 'nut', 'washer'],
  });
  const files = {
    a: await shapeImage({ name: 'a.png' }),
    b: await shapeImage({ name: 'same.png' }),
    c: await shapeImage({ name: 'c.png', format: 'jpeg' }),
    d: await shapeImage({ name: 'same.png' }),
  };
  const ids = await world.server.services().imageIntake.add(datasetId, [
    {
      bytes: files.a.bytes,
      filename: 'a.png',
      split: 'train',
      labels: [{ classId: 0, bbox: files.a.bbox }],
      metadata: { camera: 'north' },
    },
    {
      bytes: files.b.bytes,
      filename: 'same.png',
      split: 'val',
      labels: [
        { classId: 1, bbox: files.b.bbox },
        { classId: 2, bbox: files.b.bbox },
      ],
    },
    { bytes: files.c.bytes, filename: 'c.png', split: 'test' },
    { bytes: files.d.bytes, filename: 'same.png', split: 'train' },
  ]);
  return { datasetId, files, ids: { a: ids[0], b: ids[1], c: ids[2], d: ids[3] } };
}

async function fetchNdjson(url: string): Promise<Ndjson> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`NDJSON download: ${response.status}`);
  const [header, ...images] = (await response.text())
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as unknown);
  return { header: header as Ndjson['header'], images: images as NdjsonImage[] };
}

/** GET export as `key`; null for an anonymous call. */
const exportOf = (world: World, query = '', key: string | null = world.editor) =>
  call<{ downloadUrl: string; cached?: boolean; version?: number }>(world.server, 'GET', `${PATH}/export${query}`, {
    key: key ?? undefined,
  });
const saveVersion = (world: World, body?: Record<string, unknown>, key = world.editor) =>
  call<{ version: number; reused: boolean; downloadUrl?: string }>(world.server, 'POST', `${PATH}/export`, {
    key,
    body: body ?? {},
  });
const readDataset = async (world: World) =>
  (await call<z.output<typeof DatasetRead>>(world.server, 'GET', PATH, { key: world.editor })).body.dataset;
const setLabels = (world: World, imageId: string, labels: unknown[]) =>
  call(world.server, 'PATCH', `/api/images/${imageId}`, { key: world.editor, body: { labels } });

/** What must survive a version round trip, per image line (the signed URL aside). */
const content = (ndjson: Ndjson) => ndjson.images.map(({ url: _url, ...rest }) => rest);

t.test('export of the current state: header, image lines, bytes, cache', async (t) => {
  const world = await startWorld(t);
  const { ids, files } = await partsDataset(world);
  const first = await exportOf(world, '', world.viewer);
  t.equal(first.status, 200);
  t.equal(first.body.cached, false);
  const path = new URL(first.body.downloadUrl).pathname;
  t.match(path, /\/parts\.ndjson$/, 'the file name ends in .ndjson');

  const { header, images } = await fetchNdjson(first.body.downloadUrl);
  t.match(header, {
    type: 'dataset',
    task: 'detect',
    name: 'Parts',
    description: '',
    class_names: { 0: 'bolt', 1: 'nut', 2: 'washer' },
  });
  t.notOk('version' in header, 'the current state has no version number');
  t.ok(Date.parse(header.created_at as string) && Date.parse(header.updated_at as string));
  t.same(
    images.map(({ file, split, width, height }) => ({ file, split, width, height })),
    [
      { file: 'a.png', split: 'train', width: 64, height: 48 },
      { file: 'same.png', split: 'val', width: 64, height: 48 },
      { file: 'c.png', split: 'test', width: 64, height: 48 },
      { file: `${images[3].hash.slice(0, 8)}-same.png`, split: 'train', width: 64, height: 48 },
    ],
    'oldest first; a repeated name gets the hash prefix',
  );
  t.same(images[0].annotations, { boxes: [[0, ...round(files.a.bbox)]] });
  t.same(images[1].annotations, {
    boxes: [
      [1, ...round(files.b.bbox)],
      [2, ...round(files.b.bbox)],
    ],
  });
  t.notOk('annotations' in images[2], 'no labels, no annotations');
  t.same(images[0].metadata, { camera: 'north' });
  t.notOk('metadata' in images[1], 'empty metadata is left out');
  t.ok(images.every((image) => image.type === 'image' && /^[0-9a-f]{64}$/.test(image.hash)));
  const bytes = Buffer.from(await (await fetch(images[2].url)).arrayBuffer());
  t.same(bytes, files.c.bytes, 'the image URL serves the stored bytes');

  const again = await exportOf(world);
  t.equal(again.body.cached, true, 'nothing changed: the file is reused');
  t.equal(new URL(again.body.downloadUrl).pathname, path, 'same path, only the query changes');

  await setLabels(world, ids.c, [{ classId: 2, bbox: [0.5, 0.5, 0.2, 0.2] }]);
  const changed = await exportOf(world);
  t.equal(changed.body.cached, false, 'a label edit writes a new file');
  t.equal(new URL(changed.body.downloadUrl).pathname, path);
  t.same((await fetchNdjson(changed.body.downloadUrl)).images[2].annotations, { boxes: [[2, 0.5, 0.5, 0.2, 0.2]] });

  await call(world.server, 'PATCH', PATH, { key: world.editor, body: { description: 'Bolts and nuts' } });
  const described = await exportOf(world);
  t.equal(described.body.cached, false, 'a new description is a change too');
  t.equal((await fetchNdjson(described.body.downloadUrl)).header.description, 'Bolts and nuts');
});

/** The dataset's image IDs, oldest first. */
async function imageIds(world: World): Promise<string[]> {
  const listing = await call<{ images: Array<{ id: string }> }>(world.server, 'GET', `${PATH}/images?sort=oldest`, {
    key: world.editor,
  });
  return listing.body.images.map((image) => image.id);
}

t.test('versions: numbered, reused while unchanged, described, exported as saved', async (t) => {
  const world = await startWorld(t);
  const { ids, files } = await partsDataset(world);
  const first = await saveVersion(world, { description: 'first cut' });
  t.equal(first.status, 200);
  t.match(first.body, { version: 1, reused: false });
  const v1 = await fetchNdjson(first.body.downloadUrl!);
  t.match(v1.header, { type: 'dataset', version: 1, name: 'Parts', class_names: { 0: 'bolt', 1: 'nut', 2: 'washer' } });
  t.same(
    content(v1),
    content(await fetchNdjson((await exportOf(world)).body.downloadUrl)),
    'version 1 holds the current content',
  );

  const same = await saveVersion(world, { description: 'still the first', download: false });
  t.same(
    same.body,
    { version: 1, reused: true },
    'unchanged content reuses the version; download false leaves out the URL',
  );
  t.match(
    (await readDataset(world)).versions,
    [{ version: 1, description: 'still the first' }],
    'a sent description updates the reused version',
  );
  const bare = await call<{ version: number; reused: boolean; downloadUrl?: string }>(
    world.server,
    'POST',
    `${PATH}/export`,
    { key: world.editor },
  );
  t.match(bare.body, { version: 1, reused: true }, 'the body is optional');
  t.ok(bare.body.downloadUrl, 'download defaults to true');
  t.equal((await readDataset(world)).versions[0].description, 'still the first', 'no description sent, none changed');

  await setLabels(world, ids.c, [{ classId: 0, bbox: [0.5, 0.5, 0.25, 0.25] }]);
  const second = await saveVersion(world);
  t.match(second.body, { version: 2, reused: false });
  t.match((await readDataset(world)).versions, [{ version: 1 }, { version: 2, description: null }]);

  const old = await exportOf(world, '?v=1');
  t.same(Object.keys(old.body).sort(), ['downloadUrl', 'version']);
  t.equal(old.body.version, 1);
  t.match(new URL(old.body.downloadUrl).pathname, /parts-v1\.ndjson$/);
  const oldFile = await fetchNdjson(old.body.downloadUrl);
  t.same(content(oldFile), content(v1), 'v=1 is version 1, whatever changed since');
  t.same(Buffer.from(await (await fetch(oldFile.images[0].url)).arrayBuffer()), files.a.bytes);
  t.equal(
    new URL((await exportOf(world, '?v=1')).body.downloadUrl).pathname,
    new URL(old.body.downloadUrl).pathname,
    'a version keeps its path',
  );
  t.same((await fetchNdjson((await exportOf(world, '?v=2')).body.downloadUrl)).images[2].annotations, {
    boxes: [[0, 0.5, 0.5, 0.25, 0.25]],
  });

  const patched = await call(world.server, 'PATCH', `${PATH}/export`, {
    key: world.editor,
    body: { version: 2, description: 'labeled c' },
  });
  t.same(patched.body, { ok: true });
  t.match((await readDataset(world)).versions, [{ version: 1 }, { version: 2, description: 'labeled c' }]);

  expectError(t, await exportOf(world, '?v=3'), 404, 'Version 3 of dataset acme-team/parts not found');
  expectError(
    t,
    await call(world.server, 'PATCH', `${PATH}/export`, { key: world.editor, body: { version: 7, description: 'x' } }),
    404,
  );
  expectError(t, await call(world.server, 'POST', `${PATH}/restore`, { key: world.editor, body: { version: 7 } }), 404);
  expectError(t, await exportOf(world, '?v=0'), 400, /v/);
  expectError(
    t,
    await call(world.server, 'PATCH', `${PATH}/export`, { key: world.editor, body: { version: 1 } }),
    400,
    /description/,
  );
  expectError(t, await saveVersion(world, { description: 'x'.repeat(1001) }), 400, /description/);
  expectError(t, await saveVersion(world, { tag: 'v1' }), 400);
});

t.test('two saves at once take different numbers, or the same version', async (t) => {
  const world = await startWorld(t);
  const { ids } = await partsDataset(world);
  const [one, two] = await Promise.all([
    saveVersion(world, { download: false }),
    saveVersion(world, { download: false }),
  ]);
  t.same([one.body.version, two.body.version], [1, 1], 'same content: both answer version 1');
  t.same(
    [one.body.reused, two.body.reused].sort((a, b) => Number(a) - Number(b)),
    [false, true],
  );
  await setLabels(world, ids.c, [{ classId: 1, bbox: [0.5, 0.5, 0.1, 0.1] }]);
  t.match((await saveVersion(world, { download: false })).body, { version: 2, reused: false });
});

t.test('restore rebuilds images, labels and classes, with the bytes of deleted images', async (t) => {
  const world = await startWorld(t);
  const { ids, files } = await partsDataset(world);
  const saved = await saveVersion(world, { description: 'before cleanup' });
  const v1 = await fetchNdjson(saved.body.downloadUrl!);
  const before = await readDataset(world);

  const merged = await call(world.server, 'POST', `${PATH}/classes/merge`, {
    key: world.editor,
    body: { sourceClassIds: [1], targetClassId: 0 },
  });
  t.equal(merged.status, 200);
  t.equal((await call(world.server, 'DELETE', `/api/images/${ids.a}`, { key: world.editor })).status, 200);
  await setLabels(world, ids.c, [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }]);
  t.match(await readDataset(world), { imageCount: 3, classNames: ['bolt', 'washer'] });
  t.equal((await fetch(v1.images[0].url)).status, 200, 'bytes of a deleted image stay while a version uses them');

  const restored = await call(world.server, 'POST', `${PATH}/restore`, { key: world.editor, body: { version: 1 } });
  t.same(restored.body, { version: 1, imageCount: 4 });
  const after = await readDataset(world);
  t.same(after.classNames, ['bolt', 'nut', 'washer'], 'class names as saved');
  t.same(after.classColors, before.classColors, 'each class keeps its colour');
  t.match(after, { imageCount: 4, annotationCount: 3, splits: { train: 2, val: 1, test: 1, labeled: 2 } });

  const now = await fetchNdjson((await exportOf(world)).body.downloadUrl);
  t.same(content(now), content(v1), 'images, splits, labels and metadata as the version keeps them');
  const newIds = await imageIds(world);
  t.equal(newIds.length, 4);
  t.notOk(
    newIds.some((id) => Object.values(ids).includes(id)),
    'restored images are new rows',
  );
  const image = await call<{ labels: unknown[]; imageUrl: string; metadata: unknown }>(
    world.server,
    'GET',
    `/api/images/${newIds[0]}`,
    { key: world.editor },
  );
  t.same(image.body.labels, [{ classId: 0, bbox: round(files.a.bbox) }]);
  t.same(image.body.metadata, { camera: 'north' });
  t.same(
    Buffer.from(await (await fetch(image.body.imageUrl)).arrayBuffer()),
    files.a.bytes,
    'the deleted image is served again, bytes never copied',
  );
  const search = await call<{ images: Array<{ id: string }> }>(world.server, 'GET', `${PATH}/images?search=north`, {
    key: world.editor,
  });
  t.same(
    search.body.images.map((i) => i.id),
    [newIds[0]],
    'metadata is searchable again',
  );

  t.match(
    (await saveVersion(world, { download: false })).body,
    { version: 1, reused: true },
    'the restored dataset is version 1 again',
  );
});

t.test('bytes only a version uses are kept; bytes nothing uses are freed', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'loose', name: 'Loose' });
  const [kept, dropped] = [await shapeImage(), await shapeImage()];
  const [keptId, droppedId] = await world.server.services().imageIntake.add(datasetId, [
    { bytes: kept.bytes, filename: kept.filename },
    { bytes: dropped.bytes, filename: dropped.filename },
  ]);
  const urlOf = async (id: string) =>
    (await call<{ imageUrl: string }>(world.server, 'GET', `/api/images/${id}`, { key: world.alice })).body.imageUrl;
  const keptUrl = await urlOf(keptId);
  const droppedUrl = await urlOf(droppedId);
  await call(world.server, 'DELETE', `/api/images/${droppedId}`, { key: world.alice });
  t.match(
    (
      await call(world.server, 'POST', '/api/datasets/alice/loose/export', {
        key: world.alice,
        body: { download: false },
      })
    ).body,
    { version: 1 },
  );
  await call(world.server, 'DELETE', `/api/images/${keptId}`, { key: world.alice });
  t.equal((await fetch(keptUrl)).status, 200, 'in version 1: kept');
  t.equal((await fetch(droppedUrl)).status, 404, 'in no version: freed');
});

t.test('access: viewers read, editors save, strangers see nothing of private datasets', async (t) => {
  const world = await startWorld(t);
  await partsDataset(world);
  expectError(t, await saveVersion(world, {}, world.viewer), 403);
  expectError(
    t,
    await call(world.server, 'PATCH', `${PATH}/export`, { key: world.viewer, body: { version: 1, description: 'x' } }),
    403,
  );
  expectError(t, await call(world.server, 'POST', `${PATH}/restore`, { key: world.viewer, body: { version: 1 } }), 403);
  expectError(t, await call(world.server, 'POST', `${PATH}/export`, { body: {} }), 401);
  expectError(t, await exportOf(world, '', world.bobby), 404, 'Dataset acme-team/parts not found');
  expectError(t, await exportOf(world, '', null), 404);
  expectError(t, await saveVersion(world, {}, world.bobby), 404);
  expectError(t, await call(world.server, 'GET', '/api/datasets/acme-team/nothing/export', { key: world.editor }), 404);

  await call(world.server, 'PATCH', PATH, { key: world.editor, body: { visibility: 'public' } });
  const anonymous = await exportOf(world, '', null);
  t.equal(anonymous.status, 200, 'a public dataset exports anonymously');
  t.equal((await fetchNdjson(anonymous.body.downloadUrl)).images.length, 4);
  expectError(t, await saveVersion(world, {}, world.bobby), 403, 'Permission denied for this operation');
});

interface Comparison {
  summary?: {
    added: number;
    removed: number;
    modified: number;
    moved: number;
    labelsAdded: number;
    labelsRemoved: number;
    header: Record<string, unknown>;
  };
  items: Array<{
    hash: string;
    name: string;
    change: string;
    base?: { split: string; labelCount: number };
    head?: { split: string; labelCount: number };
  }>;
  nextCursor?: string;
}

t.test('compare: what changed between two versions, page by page, and one image per version', async (t) => {
  const world = await startWorld(t);
  const { ids, files } = await partsDataset(world);
  await saveVersion(world, { download: false });
  const hashOf = async (id: string) =>
    (await call<{ properties: { hash: string } }>(world.server, 'GET', `/api/images/${id}`, { key: world.editor })).body
      .properties.hash;
  const [a, c, d] = [await hashOf(ids.a), await hashOf(ids.c), await hashOf(ids.d)];
  await call(world.server, 'DELETE', `/api/images/${ids.a}`, { key: world.editor });
  await setLabels(world, ids.c, [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }]);
  await call(world.server, 'PATCH', '/api/images/bulk', {
    key: world.editor,
    body: { imageIds: [ids.d], split: 'val' },
  });
  await call(world.server, 'PATCH', PATH, {
    key: world.editor,
    body: { description: 'Bolts', classNames: ['bolt', 'nut', 'washer', 'screw'] },
  });
  const e = await shapeImage({ name: 'e.png' });
  const datasetId = (await readDataset(world)).id;
  await world.server
    .services()
    .imageIntake.add(datasetId, [
      { bytes: e.bytes, filename: 'e.png', split: 'train', labels: [{ classId: 3, bbox: e.bbox }] },
    ]);
  await saveVersion(world, { download: false });

  const compare = (query: string, key: string | undefined = world.editor) =>
    call<Comparison>(world.server, 'GET', `${PATH}/versions/compare?${query}`, { key });
  const forward = await compare('base=1&head=2');
  t.equal(forward.status, 200);
  t.same(forward.body.summary, {
    added: 1,
    removed: 1,
    modified: 1,
    moved: 1,
    labelsAdded: 2,
    labelsRemoved: 1,
    header: {
      classChanges: { added: ['screw'], removed: [] },
      classesAdded: ['screw'],
      classesRemoved: [],
      classesRenamed: [],
      fields: { description: { base: '', head: 'Bolts' } },
      changed: ['description'],
    },
  });
  const byChange = Object.fromEntries(forward.body.items.map((item) => [item.change, item]));
  t.same(byChange.removed, {
    hash: a,
    name: 'a.png',
    ext: 'png',
    change: 'removed',
    fields: [],
    labelsAdded: 0,
    labelsRemoved: 1,
    base: { split: 'train', labelCount: 1 },
  });
  t.same(byChange.modified, {
    hash: c,
    name: 'c.png',
    ext: 'jpg',
    change: 'modified',
    fields: ['labels'],
    labelsAdded: 1,
    labelsRemoved: 0,
    base: { split: 'test', labelCount: 0 },
    head: { split: 'test', labelCount: 1 },
  });
  t.same(byChange.moved, {
    hash: d,
    name: 'same.png',
    ext: 'png',
    change: 'moved',
    fields: [],
    labelsAdded: 0,
    labelsRemoved: 0,
    base: { split: 'train', labelCount: 0 },
    head: { split: 'val', labelCount: 0 },
  });
  t.match(byChange.added, { name: 'e.png', change: 'added', head: { split: 'train', labelCount: 1 } });
  t.same(
    forward.body.items.map((item) => item.hash),
    forward.body.items.map((item) => item.hash).sort(),
    'ordered by hash',
  );
  t.notOk('nextCursor' in forward.body);

  const backward = await compare('base=2&head=1');
  t.match(backward.body.summary, {
    added: 1,
    removed: 1,
    labelsAdded: 1,
    labelsRemoved: 2,
    header: { classChanges: { added: [], removed: ['screw'] } },
  });
  t.equal(
    backward.body.items.find((item) => item.hash === a)?.change,
    'added',
    'swapping base and head reports a removed image as added',
  );

  const image = await compare(`base=1&head=2&hash=${c}`);
  t.match(image.body, {
    versions: [
      { version: 1, task: 'detect', images: [{ split: 'test', name: 'c.png', labels: [], labelCount: 0 }] },
      {
        version: 2,
        task: 'detect',
        classNames: ['bolt', 'nut', 'washer', 'screw'],
        images: [{ split: 'test', labels: [{ classId: 0, bbox: [0.5, 0.5, 0.2, 0.2] }], labelCount: 1 }],
      },
    ],
  });
  const served = await fetch(
    (image.body as unknown as { versions: Array<{ images: Array<{ imageUrl: string }> }> }).versions[0].images[0]
      .imageUrl,
  );
  t.same(Buffer.from(await served.arrayBuffer()), files.c.bytes);
  const onlyInHead = await compare(`base=1&head=2&hash=${byChange.added.hash}`);
  t.match(
    onlyInHead.body,
    { versions: [null, { version: 2, images: [{ name: 'e.png' }] }] },
    'null for the version without the image',
  );
  expectError(t, await compare(`base=1&head=2&hash=${'0'.repeat(64)}`), 404);
  expectError(t, await compare('base=1&head=9'), 404, 'Version 9 of dataset acme-team/parts not found');
  expectError(t, await compare('base=1&head=2&cursor=abc'), 400, /cursor/);
  expectError(t, await compare('base=1'), 400, /head/);
  expectError(t, await compare('base=1&head=2', world.bobby), 404);
});

t.test('compare pages 100 items at a time', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'many', name: 'Many' });
  await call(world.server, 'POST', '/api/datasets/alice/many/export', { key: world.alice, body: { download: false } });
  const images = await Promise.all(Array.from({ length: 130 }, () => shapeImage()));
  await world.server.services().imageIntake.add(
    datasetId,
    images.map((image) => ({ bytes: image.bytes, filename: image.filename })),
  );
  await call(world.server, 'POST', '/api/datasets/alice/many/export', { key: world.alice, body: { download: false } });
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await call<Comparison>(
      world.server,
      'GET',
      `/api/datasets/alice/many/versions/compare?base=1&head=2${cursor ? `&cursor=${cursor}` : ''}`,
      { key: world.alice },
    );
    t.equal(Boolean(page.body.summary), pages === 0, 'the summary comes with the first page only');
    seen.push(...page.body.items.map((item) => item.hash));
    cursor = page.body.nextCursor;
    pages += 1;
  } while (cursor);
  t.equal(pages, 2);
  t.equal(seen.length, 130);
  t.equal(new Set(seen).size, 130, 'every added image once');
});

t.test('full comparisons are limited per user and dataset; single-image ones are not', async (t) => {
  const world = await startWorld(t, { RATE_LIMIT_COMPARE: '2' });
  await partsDataset(world);
  await saveVersion(world, { download: false });
  const compare = (query: string, key = world.editor) =>
    call(world.server, 'GET', `${PATH}/versions/compare?${query}`, { key });
  t.equal((await compare('base=1&head=1')).status, 200);
  t.equal((await compare('base=1&head=1')).status, 200);
  expectError(t, await compare('base=1&head=1'), 429, /compare/, ['retryAfter', 'resetAt']);
  const listing = await call<{ images: Array<{ hash: string }> }>(world.server, 'GET', `${PATH}/images`, {
    key: world.editor,
  });
  t.equal(
    (await compare(`base=1&head=1&hash=${listing.body.images[0].hash}`)).status,
    200,
    'with hash the extra limit does not apply',
  );
  t.equal((await compare('base=1&head=1', world.viewer)).status, 200, 'another user has a count of their own');
});
