// Ingest end to end: archives made here (sharp draws the images, labels exact) go through the upload
// API and the background job into a dataset; bad input is refused or counted, failures change nothing.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import type { z } from 'zod';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { adminQuery } from './helpers/db.ts';
import { ingestArchive, uploadArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const yoloLine = (classId: number, bbox: number[]) => `${classId} ${bbox.map((v) => v.toFixed(6)).join(' ')}\n`;
const round5 = (values: number[]) => values.map((v) => Math.round(Number(v.toFixed(6)) * 1e5) / 1e5);

/** A YOLO detect archive: data.yaml, images/{train,val}/, labels/{train,val}/, with exact boxes. */
async function yoloZip(count = 6) {
  const files: Record<string, Buffer | string> = { 'data.yaml': 'names:\n  - square\n  - circle\n' };
  const expected = new Map<string, { split: string; labels: Array<{ classId: number; bbox: number[] }> }>();
  for (let i = 0; i < count; i += 1) {
    const split = i % 3 === 2 ? 'val' : 'train';
    const image = await shapeImage({
      width: 80,
      height: 60,
      box: [10 + i, 12, 20, 16],
      format: i % 2 ? 'jpeg' : 'png',
    });
    const name = `img${i}.${i % 2 ? 'jpg' : 'png'}`;
    files[`images/${split}/${name}`] = image.bytes;
    files[`labels/${split}/img${i}.txt`] =
      yoloLine(i % 2, image.bbox) + (i === 0 ? yoloLine(1, [0.5, 0.5, 0.25, 0.25]) : '');
    const labels = [
      { classId: i % 2, bbox: round5(image.bbox) },
      ...(i === 0 ? [{ classId: 1, bbox: [0.5, 0.5, 0.25, 0.25] }] : []),
    ];
    expected.set(name, { split, labels });
  }
  return { zip: await zipOf(files), expected };
}

async function datasetState(world: World, key: string, slug: string) {
  const read = await call<z.output<typeof DatasetRead>>(world.server, 'GET', `/api/datasets/alice/${slug}`, {
    key,
  });
  return read.body.dataset;
}

async function imagesByName(world: World, key: string, slug: string) {
  const listing = await call<{
    images: Array<{ id: string; name: string; split: string; labels: unknown[]; error: string | null }>;
  }>(world.server, 'GET', `/api/datasets/alice/${slug}/images?limit=1000&includeLabels=true&sort=name-asc`, { key });
  return new Map(listing.body.images.map((image) => [image.name, image]));
}

t.test('YOLO zip: classes, splits, exact labels, metadata; conflict policies on re-ingest', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'shapes', name: 'Shapes' });
  const { zip, expected } = await yoloZip();
  const job = await ingestArchive(t, world, world.alice, 'alice', 'shapes', datasetId, 'shapes.zip', zip, {
    imageMetadata: { 'images/train/img0.png': { camera: 'north' } },
  });
  t.equal(job.status, 'completed', JSON.stringify(job.error));
  t.match(job.result, {
    format: 'yolo',
    imagesAdded: 6,
    imagesSkipped: 0,
    labelErrors: 0,
    classesAdded: ['square', 'circle'],
  });
  t.match(job.progress, { stage: 'done', percent: 100, total: 6 }, 'a finished ingest reads done, not its last stage');
  t.match(job, { datasetId, modelId: null });
  t.match(await datasetState(world, world.alice, 'shapes'), {
    classNames: ['square', 'circle'],
    imageCount: 6,
    annotationCount: 7,
    splits: { train: 4, val: 2, test: 0, labeled: 6 },
    status: 'ready',
  });
  const images = await imagesByName(world, world.alice, 'shapes');
  for (const [name, want] of expected) {
    t.match(images.get(name), { split: want.split }, `${name}: split`);
    t.same(images.get(name)?.labels, want.labels, `${name}: labels exact to 5 decimals`);
  }
  const first = await call<{ metadata: Record<string, unknown> }>(
    world.server,
    'GET',
    `/api/images/${images.get('img0.png')!.id}`,
    { key: world.alice },
  );
  t.same(first.body.metadata, { camera: 'north' }, 'imageMetadata keyed by archive path');
  await checkDatasetInvariants(t, world.server, datasetId);

  const again = await ingestArchive(t, world, world.alice, 'alice', 'shapes', datasetId, 'shapes.zip', zip);
  t.match(again.result, { imagesAdded: 0, imagesSkipped: 6 }, 'the default policy skips files already in their split');
  const both = await ingestArchive(t, world, world.alice, 'alice', 'shapes', datasetId, 'shapes.zip', zip, {
    conflictPolicy: 'keep_both',
    targetSplit: 'test',
  });
  t.match(both.result, { imagesAdded: 6 }, 'into another split nothing conflicts');
  const replaced = await ingestArchive(t, world, world.alice, 'alice', 'shapes', datasetId, 'shapes.zip', zip, {
    conflictPolicy: 'replace',
    targetSplit: 'test',
  });
  t.match(replaced.result, { imagesAdded: 6, imagesReplaced: 6 });
  t.match(await datasetState(world, world.alice, 'shapes'), { imageCount: 12, splits: { train: 4, val: 2, test: 6 } });
  await checkDatasetInvariants(t, world.server, datasetId);
});

t.test('class mapping: by index, to a new name, or dropped', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, {
    dataset: 'mapped',
    name: 'Mapped',
    classNames: ['box', 'Circle'],
  });
  const { zip } = await yoloZip(4);
  const job = await ingestArchive(t, world, world.alice, 'alice', 'mapped', datasetId, 'a.zip', zip, {
    classMapping: { square: 0 },
  });
  t.match(job.result, { classesAdded: [] }, 'circle matched Circle by name, square mapped to box');
  const dataset = await datasetState(world, world.alice, 'mapped');
  t.same(dataset.classNames, ['box', 'Circle']);
  t.equal(dataset.annotationCount, 5);
  const other = await createDataset(world, world.alice, { dataset: 'dropped', name: 'Dropped' });
  const dropped = await ingestArchive(t, world, world.alice, 'alice', 'dropped', other, 'a.zip', zip, {
    classMapping: { circle: null, square: 'quad' },
  });
  t.equal(dropped.status, 'completed');
  const after = await datasetState(world, world.alice, 'dropped');
  t.same(after.classNames, ['quad']);
  t.equal(after.annotationCount, 2, 'only the square labels were kept');
  const bad = await ingestArchive(t, world, world.alice, 'alice', 'mapped', datasetId, 'a.zip', zip, {
    classMapping: { square: 9 },
  });
  t.match(bad, { status: 'failed', error: /classMapping/ });
});

t.test('untrusted archives: unsafe entries skipped and counted, bad images kept with an error', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'wild', name: 'Wild' });
  const good = await shapeImage();
  const rgba = await sharp({
    create: { width: 20, height: 20, channels: 4, background: { r: 1, g: 2, b: 3, alpha: 0.5 } },
  })
    .png()
    .toBuffer();
  const deep = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#123456' } })
    .png({ force: true })
    .toColourspace('rgb16')
    .toBuffer();
  const cmyk = await sharp({ create: { width: 20, height: 20, channels: 3, background: '#654321' } })
    .jpeg()
    .toColourspace('cmyk')
    .toBuffer();
  const zip = await zipOf(
    {
      'images/ok.png': good.bytes,
      'images/rgba.png': rgba,
      'images/deep.png': deep,
      'images/cmyk.jpg': cmyk,
      'images/broken.jpg': good.bytes.subarray(0, 40),
      'XX/escape.png': good.bytes,
      'Yabs/root.png': good.bytes,
      'images/notes.txt': 'hello',
    },
    { 'XX/escape.png': '../escape.png', 'Yabs/root.png': '/abs/root.png' },
  );
  const job = await ingestArchive(t, world, world.alice, 'alice', 'wild', datasetId, 'wild.zip', zip);
  t.equal(job.status, 'completed', String(job.error));
  t.match(job.result, { imagesAdded: 5, imagesWithErrors: 1 });
  t.ok((job.result?.entriesSkipped as number) >= 2, 'unsafe paths are skipped and counted');
  const images = await imagesByName(world, world.alice, 'wild');
  t.same([...images.keys()].sort(), ['broken.jpg', 'cmyk.jpg', 'deep.png', 'ok.png', 'rgba.png']);
  t.match(images.get('broken.jpg'), { error: /Could not decode/ });
  for (const name of ['rgba.png', 'deep.png', 'cmyk.jpg'])
    t.equal(images.get(name)?.error, null, `${name} is a usable image`);
  t.equal((await datasetState(world, world.alice, 'wild')).errorCount, 1);
});

t.test('a bad archive fails the job and leaves the dataset and the store as they were', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'keep', name: 'Keep' });
  const { zip } = await yoloZip(3);
  t.equal((await ingestArchive(t, world, world.alice, 'alice', 'keep', datasetId, 'a.zip', zip)).status, 'completed');
  const before = await datasetState(world, world.alice, 'keep');
  const storageBefore = await call<{ byKind: Record<string, number> }>(world.server, 'GET', '/api/storage', {
    key: world.alice,
  });

  const truncated = await ingestArchive(
    t,
    world,
    world.alice,
    'alice',
    'keep',
    datasetId,
    'b.zip',
    zip.subarray(0, zip.length - 200),
  );
  t.match(truncated, { status: 'failed', error: /corrupt|truncated/i });
  const bomb = await zipOf({ 'images/zeros.png': Buffer.alloc(300 * 2 ** 20) });
  t.match(await ingestArchive(t, world, world.alice, 'alice', 'keep', datasetId, 'bomb.zip', bomb), {
    status: 'failed',
    error: /ratio|bomb/i,
  });
  t.match(
    await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'keep',
      datasetId,
      'empty.zip',
      await zipOf({ 'readme.txt': 'nothing here' }),
    ),
    { status: 'failed', error: /No images/ },
  );

  const after = await datasetState(world, world.alice, 'keep');
  for (const field of ['imageCount', 'annotationCount', 'classNames', 'splits'] as const)
    t.same(after[field], before[field], `${field} unchanged`);
  const storageAfter = await call<{ byKind: Record<string, number> }>(world.server, 'GET', '/api/storage', {
    key: world.alice,
  });
  t.equal(
    storageAfter.body.byKind.datasetImages,
    storageBefore.body.byKind.datasetImages,
    'no image bytes left behind',
  );
  const [staged] = await query<{ n: number }>(
    world.server.services().em,
    'select count(*)::int as n from ingest_staged_images',
  );
  t.equal(staged.n, 0, 'nothing left staged');
});

/** The test's file server listens on loopback, which downloads reach only when the operator allows it. */
const LOCAL_SOURCES = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' };

/** An HTTP server whose one file is held back until `release()`: a download that is in flight on demand. */
async function heldFile(t: Test, body: Buffer) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let requests = 0;
  const server = createServer((req, res) => {
    requests += 1;
    void released.then(() => {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': body.length });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/data/shapes.zip`,
    release,
    requests: () => requests,
  };
}

t.test('sourceUrl, cancellation and a restart in the middle', async (t) => {
  const world = await startWorld(t, LOCAL_SOURCES);
  const datasetId = await createDataset(world, world.alice, { dataset: 'remote', name: 'Remote' });
  const { zip } = await yoloZip(3);

  const held = await heldFile(t, zip);
  const started = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/remote/ingest', {
    key: world.alice,
    body: { sourceUrl: held.url },
  });
  t.equal(started.status, 201);
  await waitForJob(t, world, world.alice, started.body.jobId, { until: (job) => job.status === 'running' });
  const cancel = await call(world.server, 'DELETE', `/api/jobs/${started.body.jobId}`, { key: world.alice });
  t.equal(cancel.status, 200);
  const cancelled = await waitForJob(t, world, world.alice, started.body.jobId);
  t.equal(cancelled.status, 'cancelled');
  expectError(t, await call(world.server, 'DELETE', `/api/jobs/${started.body.jobId}`, { key: world.alice }), 409);
  t.equal((await datasetState(world, world.alice, 'remote')).imageCount, 0, 'a cancelled ingest added nothing');

  // A restart: the first control plane stops while the job downloads; a second one on the same database finishes it.
  const second = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/remote/ingest', {
    key: world.alice,
    body: { sourceUrl: held.url },
  });
  await waitForJob(t, world, world.alice, second.body.jobId, { until: (job) => job.status === 'running' });
  const { startTestServer } = await import('./helpers/server.ts');
  await world.server.close();
  const sql = async (text: string, params: unknown[] = []) =>
    (await adminQuery(text, params, world.server.databaseUrl)).rows as Record<string, unknown>[];
  const [requeued] = await sql('select status from jobs where id = $1', [second.body.jobId]);
  t.equal(requeued.status, 'queued', 'a stopping control plane hands its running jobs back');
  // Make it look like a crash instead: still running, owned by a process whose lease ran out.
  await sql(
    `update jobs set status = 'running', lease_owner = 'crashed', lease_expires_at = now() - interval '1 second', attempts = 1 where id = $1`,
    [second.body.jobId],
  );
  // And a job whose process died on its last allowed attempt.
  await sql(
    `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status, payload, attempts, max_attempts, lease_owner, lease_expires_at, cancel_requested, priority)
                   select 'ffffffffffffffffffffffff', now(), now(), workspace_id, 'ingest', id, 'running', '{}', 3, 3, 'crashed', now() - interval '1 second', false, 0 from datasets where id = $1`,
    [datasetId],
  );
  const fetchesBefore = held.requests();
  const successor = await startTestServer(t, {
    databaseUrl: world.server.databaseUrl,
    env: { RATE_LIMIT_DEFAULT: '1000000', STORAGE_URL: `file://${world.server.dataDir}/blobs`, ...LOCAL_SOURCES },
  });
  held.release();
  const resumed = await waitForJob(t, { ...world, server: successor }, world.alice, second.body.jobId);
  t.match(resumed, { status: 'completed', result: { imagesAdded: 3 } });
  t.ok(held.requests() > fetchesBefore, 'the successor fetched the file again');
  t.equal((await datasetState({ ...world, server: successor }, world.alice, 'remote')).imageCount, 3);
  const [given] = await sql(`select status, error from jobs where id = 'ffffffffffffffffffffffff'`);
  t.match(given, { status: 'failed', error: /interrupted 3 times/ }, 'a job that kept losing its process fails');
});

t.test(
  'a job cancelled while its process is dead is never run again: it ends cancelled, the dataset unchanged',
  async (t) => {
    const world = await startWorld(t, LOCAL_SOURCES);
    await createDataset(world, world.alice, { dataset: 'doomed', name: 'Doomed' });
    const held = await heldFile(t, (await yoloZip(3)).zip);
    const started = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/doomed/ingest', {
      key: world.alice,
      body: { sourceUrl: held.url },
    });
    const jobId = started.body.jobId;
    await waitForJob(t, world, world.alice, jobId, { until: (job) => job.status === 'running' });
    await world.server.close();
    // As a kill -9 leaves it: running, its lease held by a process that is gone.
    const sql = async (text: string, params: unknown[] = []) =>
      (await adminQuery(text, params, world.server.databaseUrl)).rows as Record<string, unknown>[];
    await sql(
      `update jobs set status = 'running', lease_owner = 'crashed', lease_expires_at = now() + interval '1 hour', attempts = 1 where id = $1`,
      [jobId],
    );
    const { startTestServer } = await import('./helpers/server.ts');
    const successor = await startTestServer(t, {
      databaseUrl: world.server.databaseUrl,
      env: { ...LOCAL_SOURCES, RATE_LIMIT_DEFAULT: '1000000', STORAGE_URL: `file://${world.server.dataDir}/blobs` },
    });
    const after = { ...world, server: successor };
    const cancel = await call(successor, 'DELETE', `/api/jobs/${jobId}`, { key: world.alice });
    t.same(
      cancel.body,
      { success: true, status: 'running' },
      'the cancel is accepted while the dead holder still has the lease',
    );
    const fetchesBefore = held.requests();
    held.release();
    await sql(`update jobs set lease_expires_at = now() - interval '1 second' where id = $1`, [jobId]);
    const ended = await waitForJob(t, after, world.alice, jobId);
    t.match(
      ended,
      { status: 'cancelled', error: 'Cancelled' },
      'the runner that reaches it after the lease ends it cancelled',
    );
    t.equal(held.requests(), fetchesBefore, 'it was not run again (the file was not fetched)');
    t.equal((await datasetState(after, world.alice, 'doomed')).imageCount, 0, 'nothing was committed');
  },
);

t.test('request validation', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'target', name: 'Target' });
  const otherId = await createDataset(world, world.alice, { dataset: 'other', name: 'Other' });
  const otherSession = await uploadArchive(
    world,
    world.alice,
    otherId,
    'x.zip',
    await zipOf({ 'a.png': (await shapeImage()).bytes }),
  );
  const ingest = (body: unknown, key = world.alice) =>
    call(world.server, 'POST', '/api/datasets/alice/target/ingest', { key, body });
  expectError(t, await ingest({}), 400, /exactly one/);
  expectError(t, await ingest({ sessionId: otherSession, sourceUrl: 'https://example.com/a.zip' }), 400, /exactly one/);
  expectError(t, await ingest({ sessionId: otherSession }), 400, /another dataset/);
  expectError(t, await ingest({ sourceUrl: 'ftp://host/a.zip' }), 400, /sourceUrl/);
  expectError(t, await ingest({ sourceUrl: 'https://host/a.rar' }), 400, /sourceUrl/);
  expectError(t, await ingest({ sourceUrl: `https://host/${'a'.repeat(4100)}.zip` }), 400, /sourceUrl/);
  expectError(
    t,
    await ingest({ reference: { provider: 'cloud', integrationId: 'a'.repeat(24), target: 'bucket' } }),
    404,
    /integration/,
  );
  expectError(t, await ingest({ reference: { provider: 'nfs' } }), 400);
  expectError(t, await ingest({ sourceUrl: 'https://host/a.zip', conflictPolicy: 'merge' }), 400, /conflictPolicy/);
  expectError(t, await ingest({ sourceUrl: 'https://host/a.zip', targetSplit: 'holdout' }), 400, /targetSplit/);
  expectError(
    t,
    await ingest({ sourceUrl: 'https://host/a.zip', imageMetadata: { '../x.png': { a: 1 } } }),
    400,
    /imageMetadata/,
  );
  expectError(
    t,
    await ingest({ sourceUrl: 'https://host/a.zip', imageMetadata: { 'a.png': { ['k'.repeat(129)]: 1 } } }),
    400,
    /128/,
  );
  expectError(t, await ingest({ sourceUrl: 'https://host/a.zip' }, world.bobby), 404);
  const pending = await call<{ sessionId: string }>(world.server, 'POST', '/api/upload/signed-url', {
    key: world.alice,
    body: {
      assetType: 'datasets',
      assetId: datasetId,
      filename: 'p.zip',
      contentType: 'application/zip',
      totalBytes: 10,
    },
  });
  expectError(t, await ingest({ sessionId: pending.body.sessionId }), 409, /No file/);
  const [jobs] = await query<{ n: number }>(world.server.services().em, 'select count(*)::int as n from jobs');
  t.equal(jobs.n, 0, 'refused requests queued nothing');
});

t.test('a dataset shows a running ingest: status processing, and progress for editors of large imports', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.team, { dataset: 'big', name: 'Big', visibility: 'public' });
  const read = async (key?: string) =>
    (await call<z.output<typeof DatasetRead>>(world.server, 'GET', '/api/datasets/acme-team/big', { key })).body
      .dataset;
  t.equal((await read(world.editor)).status, 'ready');
  // A job as a runner leaves it midway through an import of 12,000 images.
  await query(
    world.server.services().em,
    `insert into jobs (id, created_at, updated_at, workspace_id, kind, subject_id, status, payload, progress, attempts, max_attempts, cancel_requested, priority)
    select 'eeeeeeeeeeeeeeeeeeeeeeee', now(), now(), workspace_id, 'ingest', id, 'running', '{}', '{"stage":"processing","percent":40,"processed":4000,"total":12000}', 1, 3, false, 0 from datasets where id = ?`,
    [datasetId],
  );
  t.match(await read(world.editor), {
    status: 'processing',
    processingProgress: { stage: 'processing', percent: 40, processed: 4000, total: 12000 },
  });
  const viewer = await read(world.viewer);
  t.equal(viewer.status, 'processing');
  t.notOk('processingProgress' in viewer, 'viewers see the status, not the progress');
  t.notOk('processingProgress' in (await read()), 'nor do anonymous readers of a public dataset');
  await query(
    world.server.services().em,
    `update jobs set progress = '{"stage":"processing","percent":40,"processed":40,"total":120}' where id = 'eeeeeeeeeeeeeeeeeeeeeeee'`,
  );
  t.notOk('processingProgress' in (await read(world.editor)), 'small imports show no progress');
});
