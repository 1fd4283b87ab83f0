// Ingest by reference: a YOLO layout in a bucket of a real S3 server (SeaweedFS) indexed in place through a storage
// integration: images, splits, classes and boxes as from an archive, only thumbnails stored, the image URLs serving the
// bucket's bytes; a re-sync picks up added, changed and removed files; a failed sync leaves the dataset as it was.
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { z } from 'zod';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { sweepOrphanImageBlobs } from '../control-plane/src/images/image-blobs.ts';
import { decodeImage } from '../control-plane/src/images/image-decode.ts';
import { DELETED_WHILE_SYNCING } from '../control-plane/src/ingest/reference/reference-plan.ts';
import { storeImageFiles } from '../control-plane/src/images/image-intake.ts';
import { adminQuery } from './helpers/db.ts';
import { expectError } from './helpers/expect.ts';
import { waitForJob, type JobView } from './helpers/archives.ts';
import { shapeImage } from './helpers/images.ts';
import { startS3Server } from './helpers/s3-server.ts';
import { call, type Fetched } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface ImageItem {
  id: string;
  name: string;
  hash: string;
  split: string;
  bytes: number;
  width: number;
  labelCount: number;
  labels?: Array<{ classId: number; bbox?: number[] }>;
  thumbnailUrl?: string;
  imageUrl?: string;
}

const s3 = await startS3Server(t);
const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
t.teardown(() => client.destroy());
const put = (key: string, body: Buffer | string) =>
  client.send(
    new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: typeof body === 'string' ? Buffer.from(body) : body }),
  );
const remove = (key: string) => client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }));

const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', RATE_LIMIT_MUTATION: '1000000' });
const api = <T = Record<string, unknown>>(method: string, path: string, key: string, body?: unknown) =>
  call<T>(world.server, method, path, { key, body });
const credentials = {
  accessKeyId: s3.accessKeyId,
  secretAccessKey: s3.secretAccessKey,
  endpoint: s3.endpoint,
  region: 'us-east-1',
};
/** Rows of a query, as `Row` (the columns a test reads). */
const sql = async <Row = Record<string, unknown>>(text: string, params: unknown[] = []) =>
  (await adminQuery(text, params, world.server.databaseUrl)).rows as Row[];
/** A plain GET of a signed URL, its JSON body read (for errors). */
const fetched = async (url: string): Promise<Fetched<object>> => {
  const response = await fetch(url);
  return { status: response.status, headers: response.headers, body: (await response.json()) as object };
};
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const connected = await api<{ id: string }>('POST', '/api/integrations/buckets', world.alice, {
  provider: 's3',
  credentials,
  targets: [s3.bucket],
});
if (connected.status !== 201) throw new Error(`connect: ${connected.status} ${JSON.stringify(connected.body)}`);
const integrationId = connected.body.id;
const reference = (prefix: string) => ({ provider: 'cloud', integrationId, target: s3.bucket, prefix });

/** A JPEG with one box of class `classId`, put with its label file under `prefix` in the YOLO layout. */
async function putLabeled(prefix: string, split: string, name: string, classId: number) {
  const image = await shapeImage({ format: 'jpeg' });
  await put(`${prefix}images/${split}/${name}.jpg`, image.bytes);
  await put(`${prefix}labels/${split}/${name}.txt`, `${classId} ${image.bbox.join(' ')}\n`);
  return image;
}

async function startIngest(slug: string, ref: unknown): Promise<string> {
  const started = await api<{ jobId: string }>('POST', `/api/datasets/alice/${slug}/ingest`, world.alice, {
    reference: ref,
  });
  if (started.status !== 201) throw new Error(`ingest: ${started.status} ${JSON.stringify(started.body)}`);
  return started.body.jobId;
}
const ingest = async (slug: string, ref: unknown): Promise<JobView> =>
  waitForJob(t, world, world.alice, await startIngest(slug, ref));

const images = async (slug: string) =>
  (
    await api<{ images: ImageItem[] }>(
      'GET',
      `/api/datasets/alice/${slug}/images?includeLabels=true&includeImageUrls=true&sort=name-asc&limit=100`,
      world.alice,
    )
  ).body.images;

const files: Record<string, Awaited<ReturnType<typeof shapeImage>>> = {};
await put('yolo/data.yaml', 'names: [cat, dog]\n');
files.a = await putLabeled('yolo/', 'train', 'a', 0);
files.b = await putLabeled('yolo/', 'train', 'b', 1);
files.c = await putLabeled('yolo/', 'val', 'c', 1);
await createDataset(world, world.alice, { dataset: 'connected', name: 'Connected' });

t.test('a YOLO layout in a bucket is indexed in place: splits, classes, boxes; only thumbnails stored', async (t) => {
  const job = await ingest('connected', reference('yolo'));
  t.equal(job.status, 'completed', job.error ?? '');
  t.match(job.result, { format: 'yolo', imagesAdded: 3, labelsAdded: 3 });
  const { body } = await api<z.output<typeof DatasetRead>>('GET', '/api/datasets/alice/connected', world.alice);
  t.strictSame(body.dataset.classNames, ['cat', 'dog']);
  t.match(body.dataset, { imageCount: 3, splits: { train: 2, val: 1 }, annotationCount: 3 });
  t.match(body.dataset, {
    integrationProvider: 's3',
    integrationStatus: 'online',
    integrationProcessing: true,
    integrationWritable: false,
    source: { provider: 'cloud', format: 'yolo' },
  });
  const { body: list } = await api<{ datasets: Array<Record<string, unknown>> }>(
    'GET',
    '/api/datasets/alice',
    world.alice,
  );
  t.match(
    list.datasets.find((entry) => entry.dataset === 'connected'),
    { integrationProvider: 's3', integrationStatus: 'online', integrationWritable: false },
  );
  const listed = await images('connected');
  t.strictSame(
    listed.map((image) => [image.name, image.split, image.hash]),
    [
      ['a.jpg', 'train', sha256(files.a.bytes)],
      ['b.jpg', 'train', sha256(files.b.bytes)],
      ['c.jpg', 'val', sha256(files.c.bytes)],
    ],
  );
  for (const [image, classId] of [
    [listed[0], 0],
    [listed[1], 1],
    [listed[2], 1],
  ] as const) {
    const name = image.name[0];
    t.equal(image.labels![0].classId, classId, `${name}: class`);
    image.labels![0].bbox!.forEach((value, i) =>
      t.ok(Math.abs(value - files[name].bbox[i]) < 1e-5, `${name}: box ${i}`),
    );
  }
  const rows = await sql<{ reference_key: string; reference_version: string | null }>(
    'select reference_key, reference_version from images order by reference_key',
  );
  t.strictSame(
    rows.map((row) => row.reference_key),
    ['images/train/a.jpg', 'images/train/b.jpg', 'images/val/c.jpg'],
  );
  t.ok(
    rows.every((row) => row.reference_version),
    'each image keeps the version it was read at',
  );
  const stored = (await sql<{ key: string }>('select key from stored_objects')).map((row) => row.key);
  t.equal(stored.filter((key) => key.includes('/thumbnails/')).length, 3, 'a thumbnail per image');
  t.strictSame(
    stored.filter((key) => key.includes('/images/')),
    [],
    'no original bytes in the blob store',
  );
  const thumbnail = await fetch(listed[0].thumbnailUrl!);
  t.equal(thumbnail.status, 200);
  t.equal(thumbnail.headers.get('content-type'), 'image/webp');
});

t.test('the image URL serves the bucket object, byte for byte; a tampered URL is refused', async (t) => {
  const [a] = await images('connected');
  const served = await fetch(a.imageUrl!);
  t.equal(served.status, 200);
  t.ok(Buffer.from(await served.arrayBuffer()).equals(files.a.bytes), 'the exact bytes');
  const single = await api<{ imageUrl: string }>('GET', `/api/images/${a.id}`, world.alice);
  const again = await fetch(single.body.imageUrl);
  t.ok(Buffer.from(await again.arrayBuffer()).equals(files.a.bytes), 'the single-image URL too');
  t.equal((await fetch(a.imageUrl!.replace(/signature=[^&]+/, 'signature=x'))).status, 403);
  const other = (await images('connected'))[1];
  t.equal(
    (await fetch(a.imageUrl!.replace(a.id, other.id))).status,
    403,
    'a URL names the one image it was signed for',
  );
  t.equal(
    (await api('GET', `/api/images/${a.id}`, world.bobby)).status,
    404,
    'another workspace does not see the image',
  );
});

t.test(
  'the NDJSON export training reads serves the bucket objects, for the current state and for a saved version',
  async (t) => {
    const saved = await api<{ version: number }>('POST', '/api/datasets/alice/connected/export', world.alice, {});
    t.equal(saved.status, 200, JSON.stringify(saved.body));
    for (const query of ['', `?v=${saved.body.version}`]) {
      const exported = await api<{ downloadUrl: string }>(
        'GET',
        `/api/datasets/alice/connected/export${query}`,
        world.alice,
      );
      t.equal(exported.status, 200, JSON.stringify(exported.body));
      const lines = (await (await fetch(exported.body.downloadUrl)).text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; file?: string; url?: string });
      const a = lines.find((line) => line.type === 'image' && line.file === 'a.jpg');
      t.ok(a, `a.jpg in the export${query}`);
      t.ok(
        Buffer.from(await (await fetch(a!.url!)).arrayBuffer()).equals(files.a.bytes),
        `its url serves the object${query}`,
      );
    }
  },
);

t.test(
  'adopting a copy of an image indexed in place stores its bytes: the copy no longer depends on the storage',
  async (t) => {
    const [a] = await images('connected');
    await createDataset(world, world.alice, { dataset: 'plain', name: 'Plain' });
    const adopted = await api<{ adopted?: number }>('POST', '/api/datasets/alice/plain/images/adopt', world.alice, {
      imageIds: [a.id],
    });
    t.equal(adopted.status, 200, JSON.stringify(adopted.body));
    const [copy] = await images('plain');
    t.equal(copy.hash, a.hash);
    t.ok(
      Buffer.from(await (await fetch(copy.imageUrl!)).arrayBuffer()).equals(files.a.bytes),
      'the copy serves the same bytes, from the blob store',
    );
    t.notMatch(copy.imageUrl!, /reference-files/);
  },
);

t.test('a re-sync picks up added, changed and removed files, keeping unchanged images as they were', async (t) => {
  const before = Object.fromEntries((await images('connected')).map((image) => [image.name, image]));
  files.a = await putLabeled('yolo/', 'train', 'a', 1); // changed: new bytes, new class
  files.d = await putLabeled('yolo/', 'val', 'd', 0); // added
  await remove('yolo/images/val/c.jpg'); // removed (its label file too)
  await remove('yolo/labels/val/c.txt');
  const job = await ingest('connected', reference('yolo/'));
  t.equal(job.status, 'completed', job.error ?? '');
  t.match(job.result, { imagesAdded: 1, imagesUpdated: 2, imagesRemoved: 1 });
  const after = Object.fromEntries((await images('connected')).map((image) => [image.name, image]));
  t.strictSame(Object.keys(after).sort(), ['a.jpg', 'b.jpg', 'd.jpg']);
  t.equal(after['a.jpg'].id, before['a.jpg'].id, 'a changed file keeps its image');
  t.equal(after['a.jpg'].hash, sha256(files.a.bytes), 'with its new bytes');
  t.equal(after['a.jpg'].labels![0].classId, 1, 'and its new labels');
  const { updatedAt: _a, ...unchanged } = after['b.jpg'] as ImageItem & { updatedAt: string };
  const { updatedAt: _b, ...was } = before['b.jpg'] as ImageItem & { updatedAt: string };
  t.strictSame(unchanged, was, 'an unchanged file is as it was');
  t.ok(
    Buffer.from(await (await fetch(after['a.jpg'].imageUrl!)).arrayBuffer()).equals(files.a.bytes),
    'the URL serves the new bytes',
  );
  const { body } = await api<z.output<typeof DatasetRead>>('GET', '/api/datasets/alice/connected', world.alice);
  t.match(body.dataset, { imageCount: 3, splits: { train: 2, val: 1 }, annotationCount: 3 });
  const thumbnails = (await sql<{ key: string }>("select key from stored_objects where key like '%/thumbnails/%'")).map(
    (row) => row.key,
  );
  // A saved version (the export test's) keeps what it holds, as for any dataset.
  const wanted = (
    await sql<{ key: string }>(`select distinct 'ws/' || d.workspace_id || '/thumbnails/' || h.hash || '.webp' as key
               from (select dataset_id, hash from images union select v.dataset_id, vi.hash from dataset_version_images vi join dataset_versions v on v.id = vi.version_id) h
               join datasets d on d.id = h.dataset_id`)
  ).map((row) => row.key);
  t.strictSame(
    thumbnails.sort(),
    wanted.sort(),
    'the thumbnails of the replaced and removed files are released, the others kept',
  );
});

t.test('a file changed or removed since the last sync is a clear error, not a 500', async (t) => {
  const [a, b] = await images('connected');
  await put('yolo/images/train/a.jpg', (await shapeImage({ format: 'jpeg' })).bytes);
  expectError(t, await fetched(a.imageUrl!), 409, /changed in .* since it was indexed; sync the dataset again/);
  await remove('yolo/images/train/b.jpg');
  expectError(t, await fetched(b.imageUrl!), 404, /no longer in/);
  await put('yolo/images/train/b.jpg', files.b.bytes); // as it was: readable again
  t.equal((await fetch(b.imageUrl!)).status, 200);
  files.a = await putLabeled('yolo/', 'train', 'a', 1);
  t.equal((await ingest('connected', reference('yolo'))).status, 'completed');
});

t.test('classification folders and COCO JSON are read in place as from an archive', async (t) => {
  for (const [path, format] of [
    ['classify/train/cat/1.jpg', 'jpeg'],
    ['classify/train/dog/2.jpg', 'jpeg'],
    ['classify/val/dog/3.jpg', 'jpeg'],
  ] as const) {
    await put(path, (await shapeImage({ format })).bytes);
  }
  await createDataset(world, world.alice, { dataset: 'classes', name: 'Classes', task: 'classify' });
  t.match(await ingest('classes', reference('classify')), {
    status: 'completed',
    result: { format: 'classify-folders', imagesAdded: 3 },
  });
  const { body } = await api<z.output<typeof DatasetRead>>('GET', '/api/datasets/alice/classes', world.alice);
  t.match(body.dataset, { task: 'classify', classNames: ['cat', 'dog'], splits: { train: 2, val: 1 } });

  const image = await shapeImage({ format: 'jpeg', width: 64, height: 48, box: [8, 8, 16, 12] });
  await put('coco/images/p.jpg', image.bytes);
  const coco = {
    images: [{ id: 1, file_name: 'p.jpg', width: 64, height: 48 }],
    categories: [{ id: 7, name: 'box' }],
    annotations: [{ id: 1, image_id: 1, category_id: 7, bbox: [8, 8, 16, 12] }],
  };
  await put('coco/annotations.json', JSON.stringify(coco));
  await createDataset(world, world.alice, { dataset: 'coco', name: 'Coco' });
  const job = await ingest('coco', reference('coco'));
  t.match(job, { status: 'completed', result: { format: 'coco', imagesAdded: 1, labelsAdded: 1 } }, job.error ?? '');
  const [only] = await images('coco');
  only.labels![0].bbox!.forEach((value, i) => t.ok(Math.abs(value - image.bbox[i]) < 1e-5, `box ${i}`));
});

t.test('what an ingest by reference refuses', async (t) => {
  expectError(
    t,
    await api('POST', '/api/datasets/alice/connected/ingest', world.alice, { reference: reference('elsewhere/') }),
    409,
    /connected to another storage location/,
  );
  expectError(
    t,
    await api('POST', '/api/datasets/alice/connected/ingest', world.alice, { sourceUrl: 'https://example.com/x.zip' }),
    409,
    /connected storage/,
  );
  expectError(
    t,
    await api('POST', '/api/datasets/alice/connected/ingest', world.alice, {
      reference: { ...reference('yolo'), target: 'other-bucket' },
    }),
    404,
    /not a bucket of storage integration/,
  );
  await createDataset(world, world.bobby, { dataset: 'theirs', name: 'Theirs' });
  expectError(
    t,
    await api('POST', '/api/datasets/bobby/theirs/ingest', world.bobby, { reference: reference('yolo') }),
    404,
    /Storage integration .* not found/,
  );
  await createDataset(world, world.alice, { dataset: 'blurred', name: 'Blurred', blurFaces: true });
  expectError(
    t,
    await api('POST', '/api/datasets/alice/blurred/ingest', world.alice, { reference: reference('yolo') }),
    409,
    /blurs faces/,
  );
});

t.test('credentials revoked in the middle of a sync fail it cleanly: the dataset stays as it was', async (t) => {
  // A storage user of its own, which the S3 server revokes while it runs.
  const syncer = { accessKeyId: 'AKIASYNCER00000001', secretAccessKey: 'syncer-secret-0123456789abcdef' };
  await s3.shell(
    `s3.configure -user=syncer -access_key=${syncer.accessKeyId} -secret_key=${syncer.secretAccessKey} -actions=Read,List -apply`,
  );
  const own = await api<{ id: string }>('POST', '/api/integrations/buckets', world.alice, {
    provider: 's3',
    credentials: { ...credentials, ...syncer },
    targets: [s3.bucket],
  });
  t.equal(own.status, 201);
  const ref = { provider: 'cloud', integrationId: own.body.id, target: s3.bucket, prefix: 'revoked/' };
  for (const name of ['x', 'y']) await putLabeled('revoked/', 'train', name, 0);
  await put('revoked/data.yaml', 'names: [cat]\n');
  await createDataset(world, world.alice, { dataset: 'revoked', name: 'Revoked' });
  t.equal((await ingest('revoked', ref)).status, 'completed');
  const snapshot = async () => ({
    images: await sql(
      "select i.id, i.hash, i.reference_version, i.label_count from images i join datasets d on d.id = i.dataset_id where d.slug = 'revoked' order by i.id",
    ),
    dataset: (
      await sql(
        "select image_count, annotation_count, train_count, class_names, reference from datasets where slug = 'revoked'",
      )
    )[0],
    stored: (await sql('select key from stored_objects order by key')).map((row) => row.key),
  });
  const before = await snapshot();
  const failsCleanly = async (jobId: string, why: RegExp) => {
    const job = await waitForJob(t, world, world.alice, jobId);
    t.equal(job.status, 'failed');
    t.match(job.error, why);
    t.notMatch(job.error, syncer.secretAccessKey);
    t.strictSame(await snapshot(), before, 'images, counters, classes and stored files as they were');
    t.strictSame(await sql('select count(*)::int as n from ingest_staged_images'), [{ n: 0 }], 'nothing left staged');
  };
  for (let i = 0; i < 240; i += 1) {
    const image = await shapeImage({ format: 'jpeg', width: 640, height: 480, box: [100, 100, 200, 150] });
    await put(`revoked/images/train/n${i}.jpg`, image.bytes);
  }

  // The objects' access removed (listing still allowed): the sync lists, then its reads are refused.
  await s3.shell('s3.configure -user=syncer -actions=Read -delete -apply');
  await failsCleanly(await startIngest('revoked', ref), /refused these credentials to read/);

  // The user deleted while a sync runs: it fails wherever it is, listing or reading its 240 new files.
  await s3.shell('s3.configure -user=syncer -actions=Read -apply');
  const jobId = await startIngest('revoked', ref);
  await s3.shell('s3.configure -user=syncer -delete -apply');
  await failsCleanly(jobId, /refused these credentials/);

  // Disconnected: the dataset says so, and its files are a clear 409.
  const [image] = await images('revoked');
  t.equal((await api('DELETE', `/api/integrations/buckets/${own.body.id}`, world.alice)).status, 200);
  const { body } = await api<{ dataset: Record<string, unknown> }>('GET', '/api/datasets/alice/revoked', world.alice);
  t.match(body.dataset, { integrationStatus: 'disconnected', integrationProcessing: false });
  expectError(t, await fetched(image.imageUrl!), 409, /was disconnected/);
});

t.test(
  'files deleted while a sync reads them are left out with why; the rest is indexed and the next sync agrees',
  async (t) => {
    const count = 800;
    const keys = Array.from({ length: count }, (_, i) => `gone/g${String(i).padStart(4, '0')}.jpg`);
    const image = await shapeImage({ format: 'jpeg', width: 1280, height: 960 });
    for (let i = 0; i < count; i += 50) await Promise.all(keys.slice(i, i + 50).map((key) => put(key, image.bytes)));
    await createDataset(world, world.alice, { dataset: 'gone', name: 'Gone' });
    const jobId = await startIngest('gone', reference('gone'));
    // Once the listing is done and reads have begun, the later half of the files is deleted (images are read in key order).
    await waitForJob(t, world, world.alice, jobId, {
      until: (job) => job.progress?.stage === 'processing' || ['completed', 'failed'].includes(job.status),
    });
    const deleted = keys.slice(count / 2);
    await client.send(
      new DeleteObjectsCommand({ Bucket: s3.bucket, Delete: { Objects: deleted.map((Key) => ({ Key })) } }),
    );
    const job = await waitForJob(t, world, world.alice, jobId);
    t.equal(job.status, 'completed', job.error ?? '');
    const result = job.result as {
      imagesAdded: number;
      skippedReasons: Record<string, number>;
      skippedEntries: { path: string; reason: string }[];
    };
    const left = result.skippedReasons[DELETED_WHILE_SYNCING];
    t.ok(left > 0, `${left} files were gone when read`);
    t.equal(result.imagesAdded + left, count, 'every listed file is an image or left out');
    t.ok(
      result.skippedEntries
        .filter((entry) => entry.reason === DELETED_WHILE_SYNCING)
        .every((entry) => deleted.includes(`gone/${entry.path}`)),
      'only deleted files are left out',
    );
    const indexed = (
      await sql<{ reference_key: string }>(
        "select i.reference_key from images i join datasets d on d.id = i.dataset_id where d.slug = 'gone'",
      )
    ).map((row) => `gone/${row.reference_key}`);
    t.equal(indexed.length, result.imagesAdded);
    t.ok(
      keys.slice(0, count / 2).every((key) => indexed.includes(key)),
      'every file still there is indexed',
    );
    const again = await ingest('gone', reference('gone'));
    t.match(again.result, {
      imagesAdded: 0,
      imagesUpdated: count / 2,
      imagesRemoved: indexed.length - count / 2,
      entriesSkipped: 0,
    });
  },
);

t.test(
  'a thumbnail left by a sync whose process died is swept once nothing uses it; those of indexed images stay',
  async (t) => {
    const services = world.server.services();
    const [{ id: workspaceId }] = await sql<{ id: string }>("select id from workspaces where handle = 'alice'");
    const orphan = await shapeImage({ format: 'jpeg', width: 90, height: 70 });
    const decoded = await decodeImage(orphan.bytes, 'orphan.jpg');
    await storeImageFiles(services.em, services.storage, workspaceId, decoded, null);
    const thumbnails = async () =>
      (await sql<{ key: string }>("select key from stored_objects where key like '%/thumbnails/%' order by key")).map(
        (row) => row.key,
      );
    const before = await thumbnails();
    t.ok(before.some((key) => key.includes(decoded.hash)));
    await sql("update stored_objects set created_at = now() - interval '2 days'");
    t.ok((await sweepOrphanImageBlobs(services.em, services.storage)) >= 1);
    const after = await thumbnails();
    t.strictSame(
      after,
      before.filter((key) => !key.includes(decoded.hash)),
      'only the orphan went',
    );
    t.equal((await fetch((await images('connected'))[0].thumbnailUrl!)).status, 200);
  },
);

// A key with a character XML cannot carry is listed URL-encoded (encoding-type=url), so it is seen as it is: before,
// the garbled key read back was "no such object" and failed the whole sync.
t.test('keys no archive path could be are skipped and reported, counted like an archive entry', async (t) => {
  const image = await shapeImage({ format: 'jpeg' });
  await put('odd/plain.jpg', image.bytes);
  await put('odd/bell\u0007.jpg', image.bytes);
  await createDataset(world, world.alice, { dataset: 'odd-keys', name: 'Odd keys' });
  const job = await ingest('odd-keys', reference('odd'));
  t.equal(job.status, 'completed', job.error ?? '');
  t.match(job.result, { imagesAdded: 1, entriesSkipped: 1 });
  t.strictSame(job.result!.skippedReasons, { 'control character in name': 1 });
  t.strictSame(
    (await images('odd-keys')).map((listed) => listed.name),
    ['plain.jpg'],
  );
});

// A hostile listing may name keys whose `..` segments lead into another bucket (`named/../secret/secret.jpg`) or whose
// `.` ones name another object: they are skipped with why, never read, and the secret bucket is never asked for.
t.test(
  'keys with . or .. segments in a listing are skipped and reported, and nothing they would resolve to is read',
  async (t) => {
    await client.send(new CreateBucketCommand({ Bucket: 'secret' }));
    await client.send(
      new PutObjectCommand({ Bucket: 'secret', Key: 'secret.jpg', Body: (await shapeImage({ format: 'jpeg' })).bytes }),
    );
    await put('named/plain.jpg', (await shapeImage({ format: 'jpeg' })).bytes);
    const named = [
      'named/../secret/secret.jpg',
      'named/a/../../secret/secret.jpg',
      'named/./plain.jpg',
      'named/a/./plain.jpg',
    ];
    const paths: string[] = [];
    const proxy = createServer((request, response) => {
      paths.push((request.url ?? '/').split('?')[0]);
      const listing = /[?&]list-type=2/.test(request.url ?? '');
      const forwarded = httpRequest(
        {
          host: '127.0.0.1',
          port: new URL(s3.endpoint).port,
          method: request.method,
          path: request.url,
          headers: request.headers,
        },
        (answer) => {
          if (!listing || answer.statusCode !== 200) {
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            return void answer.pipe(response);
          }
          const entries = named
            .map(
              (key) =>
                `<Contents><Key>${encodeURIComponent(key)}</Key><Size>9</Size><ETag>"e"</ETag><LastModified>2026-01-01T00:00:00Z</LastModified></Contents>`,
            )
            .join('');
          void answer.toArray().then((chunks: Buffer[]) => {
            const body = Buffer.concat(chunks)
              .toString()
              .replace('</ListBucketResult>', `${entries}</ListBucketResult>`);
            response.writeHead(200, { 'content-type': 'application/xml' }).end(body);
          });
        },
      );
      forwarded.on('error', () => response.destroy());
      request.pipe(forwarded);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    t.teardown(() => proxy.close());
    const hostile = await api<{ id: string }>('POST', '/api/integrations/buckets', world.alice, {
      provider: 's3',
      credentials: { ...credentials, endpoint: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` },
      targets: [s3.bucket],
    });
    t.equal(hostile.status, 201, JSON.stringify(hostile.body));
    await createDataset(world, world.alice, { dataset: 'dot-keys', name: 'Dot keys' });
    const job = await ingest('dot-keys', {
      provider: 'cloud',
      integrationId: hostile.body.id,
      target: s3.bucket,
      prefix: 'named/',
    });
    t.equal(job.status, 'completed', job.error ?? '');
    t.match(job.result, { imagesAdded: 1, entriesSkipped: 4 });
    t.strictSame(job.result!.skippedReasons, {
      'parent directory (..) in path': 2,
      'a key that is not a plain relative path': 2,
    });
    t.strictSame(
      (await images('dot-keys')).map((listed) => listed.name),
      ['plain.jpg'],
    );
    t.strictSame(
      [...new Set(paths)].sort(),
      [`/${s3.bucket}`, `/${s3.bucket}/named/plain.jpg`],
      'only the listing and the plain object were asked for',
    );
  },
);
