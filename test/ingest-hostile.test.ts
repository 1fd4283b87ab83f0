// Hostile dataset files through the real ingest API: a class index in the hundreds of millions, a COCO
// annotations file of hundreds of MB, text PostgreSQL cannot store, thousands of bad lines. Each ends in a
// job result or failure the user can read, the control plane keeps serving, and nothing is added that should not be.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import type { z } from 'zod';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import yazl from 'yazl';
import { ingestArchive, type JobView, uploadArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const json = (value: unknown) => JSON.stringify(value);

async function datasetState(t: Test, world: World, slug: string) {
  const read = await call<z.output<typeof DatasetRead>>(world.server, 'GET', `/api/datasets/alice/${slug}`, {
    key: world.alice,
  });
  t.equal(read.status, 200, 'the control plane answers');
  const { imageCount, annotationCount, classNames } = read.body.dataset;
  return { imageCount, annotationCount, classNames };
}

/** Serves the given files over HTTP on 127.0.0.1, for NDJSON image URLs. */
async function fileServer(t: Test, files: Record<string, Buffer>): Promise<string> {
  const server = createServer((req, res) => {
    const body = files[req.url?.slice(1) ?? ''];
    res.writeHead(body ? 200 : 404, { 'content-type': 'image/png' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A ZIP with one entry written from a stream, so a file of hundreds of MB never exists whole here. */
async function zipOfStream(entries: Record<string, Buffer | Readable>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [path, content] of Object.entries(entries)) {
    if (Buffer.isBuffer(content)) zip.addBuffer(content, path);
    else zip.addReadStream(content, path);
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A COCO file of about `megabytes` MB: one image in the archive holding `perImage` annotations, a thousand
 * image records that are not, and the rest annotations of those. Varied numbers keep it from compressing
 * past the archive ratio limit.
 */
function bigCoco(megabytes: number, perImage: number): { stream: Readable; annotations: () => number } {
  let annotations = 0;
  function* chunks() {
    const images = [
      { id: 1, file_name: 'a.png', width: 64, height: 48 },
      ...Array.from({ length: 1000 }, (_, i) => ({ id: i + 2, file_name: `gone/${i}.jpg`, width: 640, height: 480 })),
    ];
    yield `{"info":{"description":"big"},"images":${json(images)},"categories":[{"id":1,"name":"thing"}],"annotations":[`;
    let written = 0;
    while (written < megabytes * 2 ** 20) {
      const lines: string[] = [];
      for (let i = 0; i < 2000; i += 1, annotations += 1) {
        const x = (annotations * 7919) % 600;
        const y = (annotations * 104_729) % 400;
        const imageId = annotations < perImage ? 1 : 2 + (annotations % 1000);
        const segmentation = [[x, y, x + 10.5, y, x + 10.5, y + 7.25, x + (annotations % 97), y + 3.125]];
        lines.push(
          json({
            id: annotations,
            image_id: imageId,
            category_id: 1,
            bbox: [x, y, 10.5, 7.25],
            area: 76.125,
            segmentation,
            iscrowd: 0,
          }),
        );
      }
      const text = `${written === 0 ? '' : ','}${lines.join(',')}`;
      written += text.length;
      yield text;
    }
    yield ']}';
  }
  return { stream: Readable.from(chunks()), annotations: () => annotations };
}

const MEGABYTES = 200;

// First in this file: the peak memory of the process is measured from here.
t.test('a COCO annotations file of 200 MB is read record by record: bounded memory, a small result', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'big', name: 'Big' });
  const image = await shapeImage({ name: 'a.png' });
  const coco = bigCoco(MEGABYTES, 10_005);
  const zip = await zipOfStream({ 'a.png': image.bytes, 'annotations/instances_train2017.json': coco.stream });
  t.ok(zip.length < 64 * 2 ** 20, `the archive is ${Math.round(zip.length / 2 ** 20)} MB`);
  const sessionId = await uploadArchive(world, world.alice, datasetId, 'big.zip', zip);
  const rssBefore = process.memoryUsage().rss;
  const started = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/big/ingest', {
    key: world.alice,
    body: { sessionId },
  });
  const job = await waitForJob(t, world, world.alice, started.body.jobId, { seconds: 600 });
  const grownMB = (process.resourceUsage().maxRSS * 1024 - rssBefore) / 2 ** 20;
  t.equal(job.status, 'completed', String(job.error));
  t.match(job.result, { format: 'coco', imagesAdded: 1, labelErrors: 1, labelsAdded: 0 });
  t.match(job.result?.errors, [/more than 10000 annotations for this image/]);
  // Past the 10,000th the image has its label error and its further annotations go with it.
  const skippedAnnotations = coco.annotations() - 10_005;
  t.equal(
    (job.result?.skippedReasons as Record<string, number> | undefined)?.[
      'its image_id is not an image of this file found in the archive'
    ],
    skippedAnnotations,
    'annotations of images not in the archive are counted',
  );
  t.equal(
    (job.result?.skippedReasons as Record<string, number> | undefined)?.['its file_name is not in the archive'],
    1000,
  );
  t.ok(json(job.result).length < 10_000, `the result is small (${json(job.result).length} characters)`);
  // The file's bytes are held while it is read, little more; JSON.parse of the whole file took 900 MB here.
  t.ok(
    grownMB < 2 * MEGABYTES,
    `the process grew by ${Math.round(grownMB)} MB at most while ingesting a ${MEGABYTES} MB file`,
  );
  t.match(await datasetState(t, world, 'big'), { imageCount: 1, annotationCount: 0, classNames: ['thing'] });
});

/** Uploads `bytes` as `filename` and waits for its ingest job. */
const ingest = (t: Test, world: World, datasetId: string, filename: string, bytes: Buffer | string): Promise<JobView> =>
  ingestArchive(t, world, world.alice, 'alice', 'target', datasetId, filename, Buffer.from(bytes));

t.test(
  'class indexes in the hundreds of millions: a clear reason, the control plane stays up, the dataset unchanged',
  async (t) => {
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const datasetId = await createDataset(world, world.alice, { dataset: 'target', name: 'Target' });
    const names = ['a', 'b', 'c', 'd'];
    const images = Object.fromEntries(
      await Promise.all(names.map(async (name) => [`images/${name}.png`, (await shapeImage()).bytes] as const)),
    );
    // The images are in the dataset already: the ingests below add no image, whatever their labels say.
    t.equal((await ingest(t, world, datasetId, 'plain.zip', await zipOf(images))).status, 'completed');
    const before = await datasetState(t, world, 'target');

    const yolo = await ingest(
      t,
      world,
      datasetId,
      'yolo.zip',
      await zipOf({
        ...images,
        'labels/a.txt': '1e9 0.5 0.5 0.1 0.1\n',
        'labels/b.txt': '-1 0.5 0.5 0.1 0.1\n',
        'labels/c.txt': '1.5 0.5 0.5 0.1 0.1\n',
        'labels/d.txt': 'NaN 0.5 0.5 0.1 0.1\n',
      }),
    );
    t.match(yolo, {
      status: 'completed',
      result: { imagesAdded: 0, imagesSkipped: 4, labelErrors: 4, classesAdded: [] },
    });
    t.strictSame((yolo.result?.errors as string[] | undefined)?.toSorted(), [
      'images/a.png: labels/a.txt line 1: class 1000000000 is out of range; a dataset has at most 25000 classes',
      'images/b.png: labels/b.txt line 1: class index must be a non-negative integer, got -1',
      'images/c.png: labels/c.txt line 1: class index must be a non-negative integer, got 1.5',
      'images/d.png: labels/d.txt line 1: "NaN" is not a number',
    ]);

    const server = await fileServer(t, { 'a.png': images['images/a.png'] });
    const line = json({
      type: 'image',
      file: 'a.png',
      url: `${server}/a.png`,
      split: 'train',
      annotations: { classification: [300_000_000] },
    });
    const ndjson = await ingest(t, world, datasetId, 'huge.ndjson', `${line}\n`);
    t.match(ndjson, { status: 'completed', result: { imagesSkipped: 1, labelErrors: 1, classesAdded: [] } });
    t.match(ndjson.result?.errors, [
      'a.png: line 1: annotations.classification[0]: class 300000000 is out of range; a dataset has at most 25000 classes',
    ]);

    for (const yaml of ['names: {300000000: cat}\n', 'nc: 300000000\n']) {
      const failed = await ingest(
        t,
        world,
        datasetId,
        'yaml.zip',
        await zipOf({ ...images, 'data.yaml': yaml, 'labels/a.txt': '0 0.5 0.5 0.1 0.1\n' }),
      );
      t.match(
        failed,
        { status: 'failed', error: /^data\.yaml: .*300000000.* a dataset has at most 25000 classes$/ },
        yaml,
      );
    }
    t.strictSame(await datasetState(t, world, 'target'), before, 'the dataset is as it was');
  },
);

t.test(
  'NUL and broken Unicode in names: refused with a reason the user can read, never an internal error',
  async (t) => {
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const datasetId = await createDataset(world, world.alice, { dataset: 'target', name: 'Target' });
    const image = await shapeImage();
    const server = await fileServer(t, { 'a.png': image.bytes });
    const record = (file: string, extra: Record<string, unknown> = {}) =>
      json({ type: 'image', file, url: `${server}/a.png`, split: 'train', ...extra });

    // Dataset-level: class names fail the ingest.
    const header = json({ type: 'dataset', task: 'detect', class_names: { 0: 'ca\u0000t' } });
    t.match(await ingest(t, world, datasetId, 'names.ndjson', `${header}\n${record('a.png')}\n`), {
      status: 'failed',
      error: 'names.ndjson line 1: class_names: the name of class 0 contains a NUL character',
    });
    const cocoNames = json({
      images: [{ id: 1, file_name: 'a.png', width: 64, height: 48 }],
      annotations: [],
      categories: [{ id: 1, name: 'dog\u0000' }],
    });
    t.match(
      await ingest(t, world, datasetId, 'coco.zip', await zipOf({ 'a.png': image.bytes, 'coco.json': cocoNames })),
      {
        status: 'failed',
        error: 'coco.json: categories[0].name contains a NUL character',
      },
    );
    t.match(
      await ingest(
        t,
        world,
        datasetId,
        'yaml.zip',
        await zipOf({ 'images/a.png': image.bytes, 'data.yaml': 'names: [cat, "do\\0g"]\n' }),
      ),
      {
        status: 'failed',
        error: 'data.yaml: names: the name of class 1 contains a NUL character',
      },
    );
    t.match(
      await ingest(
        t,
        world,
        datasetId,
        'surrogate.ndjson',
        `${json({ type: 'dataset', class_names: ['\ud800'] })}\n${record('a.png')}\n`,
      ),
      {
        status: 'failed',
        error: /class_names: the name of class 0 contains broken Unicode/,
      },
    );
    t.match(await datasetState(t, world, 'target'), { imageCount: 0, classNames: [] });

    // Item-level: the record is skipped with its reason, the rest goes in.
    const lines = [
      record('a.png', { metadata: { camera: { lens: 'wide\u0000' } } }),
      record('b\u0000.png'),
      record('c.png', { metadata: { ['\udc00key']: 1 } }),
      record('a.png', { metadata: { camera: 'north' } }),
    ];
    const items = await ingest(t, world, datasetId, 'items.ndjson', `${lines.join('\n')}\n`);
    t.match(items, { status: 'completed', result: { imagesAdded: 1, entriesSkipped: 3 } });
    t.strictSame(items.result?.skippedReasons, {
      '"metadata": camera.lens contains a NUL character': 1,
      '"file" contains a NUL character': 1,
      '"metadata": the key "\\udc00key" contains broken Unicode (an unpaired surrogate)': 1,
    });
    t.match(
      items.result?.skippedEntries,
      [
        { path: 'a.png', at: 'line 1' },
        { path: 'b\ufffd.png', at: 'line 2' },
        { path: 'c.png', at: 'line 3' },
      ],
      'the path shown without its NUL',
    );
    const cocoFile = json({
      images: [
        { id: 1, file_name: 'a.png', width: 64, height: 48 },
        { id: 2, file_name: 'b\u0000.png', width: 64, height: 48 },
      ],
      annotations: [{ image_id: 1, category_id: 1, bbox: [8, 8, 16, 12] }],
      categories: [{ id: 1, name: 'box' }],
    });
    const coco = await ingest(
      t,
      world,
      datasetId,
      'coco.zip',
      await zipOf({ 'a.png': image.bytes, 'coco.json': cocoFile }),
    );
    t.match(coco, {
      status: 'completed',
      result: { imagesSkipped: 1, skippedReasons: { 'file_name contains a NUL character': 1 } },
    });
  },
);

t.test(
  '5,000 bad NDJSON lines: skippedReasons grouped by reason with counts, a few examples, a small result',
  async (t) => {
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const datasetId = await createDataset(world, world.alice, { dataset: 'target', name: 'Target' });
    const image = await shapeImage();
    const server = await fileServer(t, { 'a.png': image.bytes });
    const lines = [json({ file: 'a.png', url: `${server}/a.png`, split: 'train' })];
    for (let i = 0; i < 5000; i += 1) {
      const kinds = [
        `{"file": "x${i}.png", broken`,
        json({ file: `x${i}.png`, split: 'nowhere' }),
        json({ type: `kind-${i}`, file: `x${i}.png` }),
        json([i]),
      ];
      lines.push(kinds[i % kinds.length]);
    }
    const job = await ingest(t, world, datasetId, 'bad.ndjson', `${lines.join('\n')}\n`);
    t.match(job, { status: 'completed', result: { imagesAdded: 1, entriesSkipped: 5000 } });
    t.strictSame(job.result?.skippedReasons, {
      'not valid JSON': 1250,
      '"split" must be train, val or test': 1250,
      'unknown record type': 1250,
      'not a JSON object': 1250,
    });
    t.equal((job.result?.skippedEntries as unknown[] | undefined)?.length, 12, 'three examples per reason');
    t.match((job.result?.skippedEntries as unknown[] | undefined)?.[0], {
      path: 'bad.ndjson',
      reason: 'not valid JSON',
      at: 'line 2',
    });
    t.ok(json(job.result).length < 5000, `the result is small (${json(job.result).length} characters)`);
  },
);
