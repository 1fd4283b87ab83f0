// Data in and out: a dataset exported to NDJSON and ingested into a new dataset comes back image for
// image (hash, split, labels to 5 decimals, classes, metadata), for every task with labels; and each
// archive format and layout ingests with exact labels (TAR, TGZ, COCO, classify folders, raw).
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { ingestArchive, tarOf, waitForJob, zipOf } from './helpers/archives.ts';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

interface Listed {
  id: string;
  hash: string;
  name: string;
  split: string;
}

/** Every image of a dataset as the API shows it: hash, name, split, labels (with class names), metadata. */
async function snapshot(world: World, slug: string) {
  const dataset = (
    await call<{ dataset: { classNames: string[]; task: string } }>(
      world.server,
      'GET',
      `/api/datasets/alice/${slug}`,
      { key: world.alice },
    )
  ).body.dataset;
  const list = await call<{ images: Listed[] }>(
    world.server,
    'GET',
    `/api/datasets/alice/${slug}/images?limit=1000&sort=oldest`,
    { key: world.alice },
  );
  const images = await Promise.all(
    list.body.images.map(async (image) => {
      const read = await call<{
        labels: Array<{ classId: number } & Record<string, unknown>>;
        metadata: Record<string, unknown>;
      }>(world.server, 'GET', `/api/images/${image.id}`, { key: world.alice });
      const labels = read.body.labels.map(({ classId, ...geometry }) => ({
        class: dataset.classNames[classId],
        ...geometry,
      }));
      return { hash: image.hash, split: image.split, labels, metadata: read.body.metadata };
    }),
  );
  return {
    task: dataset.task,
    classNames: dataset.classNames,
    images: images.sort((a, b) => a.hash.localeCompare(b.hash)),
  };
}

const LABELS: Record<string, (i: number) => Array<Record<string, unknown>>> = {
  detect: (i) => [{ classId: i % 2, bbox: [0.31234, 0.4, 0.2, 0.1 + i / 100] }],
  segment: (i) => [{ classId: 1, segments: [0.1, 0.1, 0.5, 0.12345, 0.3, 0.6 + i / 100] }],
  pose: (i) => [{ classId: 0, bbox: [0.5, 0.5, 0.4, 0.4], keypoints: [0.4, 0.4, 2, 0.6, 0.45 + i / 100, 1, 0, 0, 0] }],
  obb: (i) => [{ classId: 1, obb: [0.1, 0.1, 0.4, 0.12, 0.38, 0.3 + i / 100, 0.08, 0.28] }],
  classify: (i) => [{ classId: i % 2 }],
};

for (const task of Object.keys(LABELS)) {
  t.test(`NDJSON round trip: ${task}`, async (t) => {
    // The export and its image URLs are served by the test's own server, on loopback: allowed here.
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const sourceId = await createDataset(world, world.alice, {
      dataset: 'source',
      name: 'Source',
      task,
      classNames: ['alpha', 'beta'],
    });
    if (task === 'pose')
      await call(world.server, 'PATCH', '/api/datasets/alice/source', { key: world.alice, body: { kptShape: [3, 3] } });
    const images = await Promise.all([0, 1, 2].map((i) => shapeImage({ width: 40 + i, height: 30 })));
    await world.server.services().imageIntake.add(
      sourceId,
      images.map((image, i) => ({
        bytes: image.bytes,
        filename: `p${i}.png`,
        split: (['train', 'val', 'test'] as const)[i],
        labels: LABELS[task](i) as never,
        metadata: i === 1 ? { site: 'dock 4', shift: 2 } : {},
      })),
    );
    const exported = await call<{ downloadUrl: string }>(world.server, 'GET', '/api/datasets/alice/source/export', {
      key: world.alice,
    });
    t.equal(exported.status, 200);
    const targetId = await createDataset(world, world.alice, { dataset: 'copy', name: 'Copy' });
    const started = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/copy/ingest', {
      key: world.alice,
      body: { sourceUrl: exported.body.downloadUrl },
    });
    t.equal(started.status, 201);
    const job = await waitForJob(t, world, world.alice, started.body.jobId);
    t.match(job, { status: 'completed', result: { format: 'ndjson', imagesAdded: 3, labelErrors: 0 } });
    t.same(
      await snapshot(world, 'copy'),
      await snapshot(world, 'source'),
      'the copy equals the source image for image',
    );
    await checkDatasetInvariants(t, world.server, targetId);
  });
}

/** The same small YOLO tree, as entries for any archive writer. */
async function yoloTree() {
  const a = await shapeImage({ name: 'a.png' });
  const b = await shapeImage({ name: 'b.png' });
  const line = (classId: number, bbox: number[]) => `${classId} ${bbox.map((v) => v.toFixed(6)).join(' ')}\n`;
  return {
    files: {
      'data.yaml': 'names: {0: cat, 1: dog}\n',
      'train/images/a.png': a.bytes,
      'train/labels/a.txt': line(1, a.bbox),
      'valid/images/b.png': b.bytes,
      'valid/labels/b.txt': line(0, b.bbox),
    } as Record<string, Buffer | string>,
    expected: [
      {
        split: 'train',
        labels: [{ class: 'dog', bbox: a.bbox.map((v) => Math.round(Number(v.toFixed(6)) * 1e5) / 1e5) }],
      },
      {
        split: 'val',
        labels: [{ class: 'cat', bbox: b.bbox.map((v) => Math.round(Number(v.toFixed(6)) * 1e5) / 1e5) }],
      },
    ],
  };
}

async function ingestInto(
  t: Test,
  world: World,
  slug: string,
  filename: string,
  bytes: Buffer,
  body: Record<string, unknown> = {},
) {
  const id = await createDataset(world, world.alice, { dataset: slug, name: slug });
  const job = await ingestArchive(t, world, world.alice, 'alice', slug, id, filename, bytes, body);
  t.equal(job.status, 'completed', `${filename}: ${job.error}`);
  return { id, job };
}

t.test('archive kinds: ZIP, TAR, TGZ and TAR.GZ hold the same YOLO dataset', async (t) => {
  const world = await startWorld(t);
  const { files, expected } = await yoloTree();
  const archives: Array<[string, Buffer]> = [
    ['set.zip', await zipOf(files)],
    ['set.tar', await tarOf(files, false)],
    ['set.tgz', await tarOf(files, true)],
    ['set.tar.gz', await tarOf(files, true)],
  ];
  for (const [index, [filename, bytes]] of archives.entries()) {
    await ingestInto(t, world, `kind-${index}`, filename, bytes);
    const got = await snapshot(world, `kind-${index}`);
    t.same(got.classNames, ['cat', 'dog'], `${filename}: classes from data.yaml`);
    t.same(
      got.images.map(({ split, labels }) => ({ split, labels })).sort((x, y) => x.split.localeCompare(y.split)),
      expected,
      `${filename}: splits and labels`,
    );
  }
});

t.test('layouts: COCO JSON, classify folders, plain images, a pose data.yaml', async (t) => {
  const world = await startWorld(t);
  const photo = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#0a0' } })
    .png()
    .toBuffer();
  const other = await sharp({ create: { width: 100, height: 100, channels: 3, background: '#00a' } })
    .png()
    .toBuffer();
  const coco = {
    images: [
      { id: 7, file_name: 'p.png', width: 200, height: 100 },
      { id: 8, file_name: 'q.png', width: 100, height: 100 },
    ],
    categories: [
      { id: 3, name: 'car' },
      { id: 1, name: 'person' },
    ],
    annotations: [
      { id: 1, image_id: 7, category_id: 3, bbox: [20, 10, 50, 40] },
      { id: 2, image_id: 8, category_id: 1, bbox: [0, 0, 10, 20] },
    ],
  };
  await ingestInto(
    t,
    world,
    'coco',
    'coco.zip',
    await zipOf({
      'annotations/instances_val.json': JSON.stringify(coco),
      'images/p.png': photo,
      'images/q.png': other,
    }),
  );
  const cocoSet = await snapshot(world, 'coco');
  t.same(cocoSet.classNames, ['person', 'car'], 'categories ordered by id');
  const labelsOf = (set: typeof cocoSet) => set.images.map((image) => image.labels).flat();
  t.same(
    labelsOf(cocoSet).sort((a, b) => String(a.class).localeCompare(String(b.class))),
    [
      { class: 'car', bbox: [0.225, 0.3, 0.25, 0.4] },
      { class: 'person', bbox: [0.05, 0.1, 0.1, 0.2] },
    ],
  );
  t.ok(
    cocoSet.images.every((image) => image.split === 'val'),
    'split from the JSON name',
  );

  await ingestInto(
    t,
    world,
    'folders',
    'folders.zip',
    await zipOf({ 'train/cats/1.png': photo, 'train/dogs/2.png': other, 'val/cats/3.png': (await shapeImage()).bytes }),
  );
  const folders = await snapshot(world, 'folders');
  t.match(folders, { task: 'classify', classNames: ['cats', 'dogs'] });
  t.same(
    folders.images.map((image) => image.labels.length),
    [1, 1, 1],
  );

  const { job } = await ingestInto(
    t,
    world,
    'plain',
    'plain.tar',
    await tarOf({ 'photos/x.png': photo, 'photos/y.png': other }, false),
  );
  t.match(job.result, { format: 'raw', imagesAdded: 2, labelsAdded: 0 });

  const pose = await shapeImage();
  await ingestInto(
    t,
    world,
    'pose',
    'pose.zip',
    await zipOf({
      'data.yaml': 'kpt_shape: [2, 3]\nnames: [person]\n',
      'images/train/k.png': pose.bytes,
      'labels/train/k.txt': '0 0.5 0.5 0.4 0.4 0.4 0.4 2 0.6 0.45 1\n',
    }),
  );
  const poseSet = await snapshot(world, 'pose');
  t.equal(poseSet.task, 'pose', 'the first ingest sets the task from the archive');
  t.same(poseSet.images[0].labels, [
    { class: 'person', bbox: [0.5, 0.5, 0.4, 0.4], keypoints: [0.4, 0.4, 2, 0.6, 0.45, 1] },
  ]);
});
