// Class statistics of a dataset: exact per-class counts, image and annotation histograms, the two heatmaps,
// the cache keyed by the dataset revision, empty datasets, and the sample taken above 5,000,000 images.
import sharp from 'sharp';
import t from 'tap';
import { Workspace } from '../control-plane/src/account/workspace.entity.ts';
import { classStats, niceBinning, SAMPLE_ABOVE } from '../control-plane/src/datasets/class-stats.ts';
import { ClassStats } from '../control-plane/src/datasets/class-stats.schemas.ts';
import { Dataset } from '../control-plane/src/datasets/dataset.entity.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { startTestServer } from './helpers/server.ts';

const server = await startTestServer(t, { env: { RATE_LIMIT_DEFAULT: '100000' } });
const { workspace } = await server.services().account.createUser('alice');

const image = (width: number, height: number, format: 'png' | 'jpeg' = 'png') =>
  sharp({ create: { width, height, channels: 3, background: '#f00' } })
    [format]()
    .toBuffer();

async function newDataset(slug: string, classNames: string[]): Promise<string> {
  const s = server.services();
  const dataset = s.em.create(Dataset, {
    workspace: s.em.getReference(Workspace, workspace.id),
    slug,
    name: slug,
    classNames,
  });
  await s.em.flush();
  return dataset.id;
}

/** classStats on a fresh fork, as a request would call it. */
async function stats(datasetId: string) {
  const em = server.services().em;
  const result = await classStats(em, await em.findOneOrFail(Dataset, datasetId));
  return ClassStats.parse(result);
}

const total = (bins: Array<{ count: number }>) => bins.reduce((sum, bin) => sum + bin.count, 0);
const hits = (bins: Array<{ bin: number; count: number }>) =>
  bins.filter((bin) => bin.count > 0).map(({ bin, count }) => [bin, count]);
const cells = (grid: number[][]) => grid.flatMap((row, y) => row.flatMap((n, x) => (n > 0 ? [[y, x, n]] : [])));

t.test('nice bin widths are 1, 2 or 5 × 10^n, at least 1, aligned on their multiples', async (t) => {
  t.same(niceBinning(64, 640), { lo: 50, width: 50, bins: 12 });
  t.same(niceBinning(0, 3), { lo: 0, width: 1, bins: 4 });
  t.same(niceBinning(7, 7), { lo: 7, width: 1, bins: 1 });
  t.same(niceBinning(10_000, 5_000_000), { lo: 0, width: 500_000, bins: 11 });
  t.same(niceBinning(0, 2000), { lo: 0, width: 100, bins: 21 });
});

t.test('statistics of a small dataset, cached until it changes', async (t) => {
  const id = await newDataset('shapes', ['cat', 'dog', 'bird']);
  const intake = server.services().imageIntake;
  await intake.add(id, [
    {
      bytes: await image(64, 48),
      filename: 'a.png',
      labels: [
        { classId: 0, bbox: [0.1, 0.1, 0.1, 0.1] },
        { classId: 0, bbox: [0.12, 0.13, 0.2, 0.3] },
        { classId: 1, bbox: [0.11, 0.14, 0.05, 0.05] },
      ],
    },
    {
      bytes: await image(640, 480),
      filename: 'b.png',
      split: 'val',
      labels: [{ classId: 1, bbox: [0.9, 0.5, 0.35, 0.2] }],
    },
    { bytes: await image(100, 200, 'jpeg'), filename: 'c.jpg' },
    { bytes: Buffer.from('not an image at all'), filename: 'd.jpg' },
  ]);

  const first = await stats(id);
  t.equal(first.cached, false);
  t.equal(first.sampleSize, null);
  t.same(first.classNames, ['cat', 'dog', 'bird']);
  t.same(first.classes, [
    { classId: 0, count: 2, imageCount: 1 },
    { classId: 1, count: 2, imageCount: 2 },
    { classId: 2, count: 0, imageCount: 0 },
  ]);
  const s = first.imageStats;
  t.same(s.formatDistribution, { jpg: 2, png: 2 }, 'the undecodable file counts under its name extension');
  // 64, 100, 640 wide (the broken file has no dimensions): 50-pixel bins from 50.
  t.equal(total(s.widthHistogram), 3);
  t.same(hits(s.widthHistogram), [
    [50, 1],
    [100, 1],
    [600, 1],
  ]);
  t.same(s.widthHistogram[0], { bin: 50, count: 1, size: 50 });
  t.equal(s.widthHistogram.length, 12);
  t.equal(total(s.heightHistogram), 3);
  t.same(hits(s.heightHistogram), [
    [0, 1],
    [200, 1],
    [450, 1],
  ]);
  t.same(s.objectsPerImageHistogram, [
    { bin: 0, count: 2, size: 1 },
    { bin: 1, count: 1, size: 1 },
    { bin: 2, count: 0, size: 1 },
    { bin: 3, count: 1, size: 1 },
  ]);
  t.equal(total(s.fileSizeHistogram), 4);
  t.same(s.pointsHistogram, [{ bin: 2, count: 4, size: 1 }], 'boxes have 2 points');
  t.equal(s.bboxWidthHistogram.length, 20);
  t.same(
    s.bboxWidthHistogram[7],
    { bin: 0.35, count: 1, size: 0.05 },
    '0.35 lands in [0.35, 0.4) although stored as real',
  );
  t.same(hits(s.bboxWidthHistogram), [
    [0.05, 1],
    [0.1, 1],
    [0.2, 1],
    [0.35, 1],
  ]);
  t.same(hits(s.bboxHeightHistogram), [
    [0.05, 1],
    [0.1, 1],
    [0.2, 1],
    [0.3, 1],
  ]);
  t.same(
    cells(first.locationHeatmap.bins),
    [
      [2, 2, 3],
      [10, 18, 1],
    ],
    'rows are y, columns x',
  );
  t.equal(first.locationHeatmap.maxCount, 3);
  t.equal(first.locationHeatmap.bins.length, 20);
  t.ok(first.locationHeatmap.bins.every((row) => row.length === 20));
  const d = first.dimensionHeatmap;
  t.same([d.minWidth, d.maxWidth, d.minHeight, d.maxHeight], [64, 640, 48, 480]);
  // 100×200: column (100-64)·20/576 = 1, row (200-48)·20/432 = 7; the maxima fall in the last cell.
  t.same(cells(d.bins), [
    [0, 0, 1],
    [7, 1, 1],
    [19, 19, 1],
  ]);
  t.equal(d.maxCount, 1);

  const second = await stats(id);
  t.equal(second.cached, true, 'served from the cache while the revision stands');
  t.same({ ...second, cached: false }, first);

  await server
    .services()
    .imageIntake.add(id, [
      { bytes: await image(64, 48, 'jpeg'), filename: 'e.jpg', labels: [{ classId: 2, bbox: [0.5, 0.5, 1, 1] }] },
    ]);
  const third = await stats(id);
  t.equal(third.cached, false, 'a new image moves the revision');
  t.same(third.classes[2], { classId: 2, count: 1, imageCount: 1 });
  t.same(third.imageStats.formatDistribution, { jpg: 3, png: 2 });
  t.same(hits(third.imageStats.bboxWidthHistogram).at(-1), [0.95, 1], 'a full-width box goes in the last bin');
  t.equal(third.locationHeatmap.bins[10][10], 1);
  t.equal((await stats(id)).cached, true);
});

t.test('a result computed while a write landed is returned but not cached', async (t) => {
  const id = await newDataset('moving', ['a']);
  const em = server.services().em;
  const dataset = await em.findOneOrFail(Dataset, id);
  // The revision read first is 0; a write landing before the store moves it, so the store matches nothing.
  await em.transactional(async (trx) => {
    const result = classStats(trx, dataset);
    await query(trx, 'update datasets set revision = revision + 1 where id = ?', [id]);
    t.equal((await result).cached, false);
  });
  const [row] = await query<{ stats_revision: number | null }>(
    server.services().em,
    'select stats_revision from datasets where id = ?',
    [id],
  );
  t.equal(row.stats_revision, null);
});

t.test('an empty dataset gives empty histograms and zero heatmaps', async (t) => {
  const id = await newDataset('empty', ['a', 'b']);
  const result = await stats(id);
  const zeros = Array.from({ length: 20 }, () => Array.from({ length: 20 }, () => 0));
  t.same(result.classes, [
    { classId: 0, count: 0, imageCount: 0 },
    { classId: 1, count: 0, imageCount: 0 },
  ]);
  const s = result.imageStats;
  for (const name of [
    'widthHistogram',
    'heightHistogram',
    'pointsHistogram',
    'fileSizeHistogram',
    'objectsPerImageHistogram',
  ] as const)
    t.same(s[name], [], name);
  t.equal(s.bboxWidthHistogram.length, 20);
  t.equal(total(s.bboxWidthHistogram) + total(s.bboxHeightHistogram), 0);
  t.same(s.formatDistribution, {});
  t.same(result.locationHeatmap, { bins: zeros, maxCount: 0 });
  t.same(result.dimensionHeatmap, { bins: zeros, maxCount: 0, minWidth: 0, maxWidth: 0, minHeight: 0, maxHeight: 0 });
  t.equal(result.sampleSize, null);
  t.equal((await stats(id)).cached, true);
});

t.test('above the sampling threshold the image statistics come from a sample; class counts stay exact', async (t) => {
  t.equal(SAMPLE_ABOVE, 5_000_000, 'every image counts up to 5,000,000');
  // The same code path as above 5,000,000 images, at a smaller size: sample about 2,000 of 2,200.
  const sampleAbove = 2000;
  const images = 2200;
  const id = await newDataset('large', ['a', 'b']);
  const em = server.services().em;
  // Straight SQL: every image 100×100 png with one class-0 box; every tenth also a class-1 box.
  await query(
    em,
    `insert into images (id, created_at, updated_at, workspace_id, dataset_id, hash, ext, name, width, height, bytes, label_count, class_ids)
     select lpad(to_hex(i), 24, '0'), now(), now(), ?, ?, md5(i::text) || md5(i::text), 'png', i || '.png', 100, 100, 1000,
            case when i % 10 = 0 then 2 else 1 end, case when i % 10 = 0 then '{0,1}'::int[] else '{0}'::int[] end
     from generate_series(1, ?) as i`,
    [workspace.id, id, images],
  );
  await query(
    em,
    `insert into annotations (image_id, position, dataset_id, class_id, label, cx, cy, w, h, points)
     select lpad(to_hex(i), 24, '0'), p, ?, p, '{}', 0.5, 0.5, 0.1, 0.1, 2
     from generate_series(1, ?) as i, generate_series(0, 1) as p where p = 0 or i % 10 = 0`,
    [id, images],
  );
  await query(em, 'update datasets set image_count = ?, revision = revision + 1 where id = ?', [images, id]);

  const run = async () =>
    classStats(server.services().em, await server.services().em.findOneOrFail(Dataset, id), { sampleAbove });
  const result = ClassStats.parse(await run());
  const sampleSize = result.sampleSize ?? 0;
  t.ok(sampleSize > 1800 && sampleSize < 2200, `about ${sampleAbove} sampled (${sampleSize})`);
  t.equal(total(result.imageStats.widthHistogram), sampleSize, 'image histograms count the sample');
  t.equal(total(result.imageStats.objectsPerImageHistogram), sampleSize);
  const twoBoxes = result.imageStats.objectsPerImageHistogram.find((bin) => bin.bin === 2)?.count ?? 0;
  t.same(result.classes, [
    { classId: 0, count: images, imageCount: images },
    { classId: 1, count: images / 10, imageCount: images / 10 },
  ]);
  t.equal(
    result.locationHeatmap.bins[10][10],
    sampleSize + twoBoxes,
    'the annotations of the sampled images, no others',
  );
  t.equal(total(result.imageStats.bboxWidthHistogram), sampleSize + twoBoxes);
  const again = await run();
  t.equal(again.cached, true);
  t.equal(again.sampleSize, sampleSize, 'the cache keeps the sample size');
  await query(em, 'update datasets set revision = revision + 1 where id = ?', [id]);
  t.equal((await run()).sampleSize, sampleSize, 'the sample is the same images every time');
});
