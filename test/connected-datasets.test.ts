// A dataset indexed in place from a storage integration is read-only where the spec says so (clone, adopt into it,
// moving out of it, auto-annotate, restoring a version), and its integration's processing switch decides whether AI
// features read its images (analysis, similar images, batch labeling, training); a refusal changes nothing.
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import t from 'tap';
import { DatasetRead } from '../control-plane/src/datasets/dataset.schemas.ts';
import { adminQuery } from './helpers/db.ts';
import { expectError } from './helpers/expect.ts';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { shapeImage } from './helpers/images.ts';
import { createModel, createProject } from './helpers/models.ts';
import { startS3Server } from './helpers/s3-server.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const s3 = await startS3Server(t);
const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3 });
t.teardown(() => client.destroy());
const put = (key: string, body: Buffer | string) =>
  client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));

const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32', RATE_LIMIT_MUTATION: '1000000' });
const api = <T = Record<string, unknown>>(method: string, path: string, body?: unknown) =>
  call<T>(world.server, method, path, { key: world.alice, body });
const counts = async () =>
  (
    await adminQuery(
      `select (select count(*) from datasets)::int as datasets, (select count(*) from images)::int as images, (select count(*) from jobs)::int as jobs`,
      [],
      world.server.databaseUrl,
    )
  ).rows[0] as { datasets: number; images: number; jobs: number };

// The connected dataset: two labeled JPEGs in a bucket, indexed in place from a folder whose name, like the
// images', holds a space, a + and a non-ASCII letter (each a query or path must carry exactly).
const PREFIX = 'my set+ü/';
await put(`${PREFIX}data.yaml`, 'names: [cat]\n');
for (const name of ['a b', 'ü+c']) {
  const image = await shapeImage({ format: 'jpeg' });
  await put(`${PREFIX}images/train/${name}.jpg`, image.bytes);
  await put(`${PREFIX}labels/train/${name}.txt`, `0 ${image.bbox.join(' ')}\n`);
}
const credentials = {
  accessKeyId: s3.accessKeyId,
  secretAccessKey: s3.secretAccessKey,
  endpoint: s3.endpoint,
  region: 'us-east-1',
};
const integration = (
  await api<{ id: string }>('POST', '/api/integrations/buckets', { provider: 's3', credentials, targets: [s3.bucket] })
).body;
await createDataset(world, world.alice, { dataset: 'connected', name: 'Connected' });
const indexed = await api<{ jobId: string }>('POST', '/api/datasets/alice/connected/ingest', {
  reference: { provider: 'cloud', integrationId: integration.id, target: s3.bucket, prefix: PREFIX },
});
const indexing = await waitForJob(t, world, world.alice, indexed.body.jobId);
if (indexing.status !== 'completed') throw new Error(`indexing: ${indexing.status} ${indexing.error}`);
await api('POST', '/api/datasets/alice/connected/versions', { description: 'v1' });
const connectedImages = (
  await api<{ images: Array<{ id: string; name: string }> }>('GET', '/api/datasets/alice/connected/images')
).body.images;

// An ordinary dataset beside it, with one image of its own.
const plainId = await createDataset(world, world.alice, { dataset: 'plain', name: 'Plain' });
const own = await shapeImage({ format: 'jpeg' });
await ingestArchive(
  t,
  world,
  world.alice,
  'alice',
  'plain',
  plainId,
  'plain.zip',
  await zipOf({ 'images/train/own.jpg': own.bytes }),
);
const plainImages = (await api<{ images: Array<{ id: string }> }>('GET', '/api/datasets/alice/plain/images')).body
  .images;

const project = await createProject(world, world.alice, { project: 'p', name: 'P' });
const model = await createModel(world, world.alice, { projectId: project, project: 'p', model: 'm', name: 'm' });

t.test('a folder and files named with spaces, + and non-ASCII are indexed, and their bytes read', async (t) => {
  t.strictSame(connectedImages.map((image) => image.name).sort(), ['a b.jpg', 'ü+c.jpg']);
  const served = await fetch(
    (await api<{ imageUrl: string }>('GET', `/api/images/${connectedImages[0].id}`)).body.imageUrl,
  );
  t.equal(served.status, 200);
  t.equal(served.headers.get('content-type'), 'image/jpeg', 'the JPEG, read from the bucket');
});

t.test("the spec's refusals for a dataset backed by connected storage change nothing", async (t) => {
  const before = await counts();
  expectError(t, await api('POST', '/api/datasets/alice/connected/clone', {}), 409, /backed by connected storage/);
  expectError(
    t,
    await api('POST', '/api/datasets/alice/connected/images/adopt', { imageIds: [plainImages[0].id] }),
    409,
    /backed by connected storage/,
  );
  expectError(
    t,
    await api('POST', '/api/datasets/alice/plain/images/adopt', { imageIds: [connectedImages[0].id], release: true }),
    403,
    /connected storage and read-only/,
  );
  expectError(
    t,
    await api('POST', `/api/images/${connectedImages[0].id}/predict`, { modelId: `ul://alice/p/${model.model}` }),
    409,
    /auto-annotating/,
  );
  expectError(
    t,
    await api('POST', '/api/datasets/alice/connected/restore', { version: 1 }),
    409,
    /restoring a version/,
  );
  t.strictSame(await counts(), before, 'no dataset, image or job was added or removed');
  const moved = await api('GET', `/api/images/${connectedImages[0].id}`);
  t.equal(moved.status, 200, 'the image the refused move named is still in its dataset');

  const copied = await api<{ adopted: number }>('POST', '/api/datasets/alice/plain/images/adopt', {
    imageIds: [connectedImages[0].id],
  });
  t.equal(copied.status, 200, 'copying out of a connected dataset (release false) stays allowed');
  t.equal(copied.body.adopted, 1);
});

t.test(
  "with the integration's processing off, AI features that read its images are 409; on again, they run",
  async (t) => {
    const patched = await api('PATCH', `/api/integrations/buckets/${integration.id}`, { processing: false });
    t.equal(patched.status, 200);
    t.equal(patched.body.processing, false);
    const read = DatasetRead.parse((await api('GET', '/api/datasets/alice/connected')).body);
    t.equal(read.dataset.integrationProcessing, false, 'the dataset says so');
    const before = await counts();
    const off = /AI features are turned off for storage integration/;
    expectError(t, await api('POST', '/api/datasets/alice/connected/embeddings'), 409, off);
    expectError(t, await api('GET', `/api/images/${connectedImages[1].id}/similar`), 409, off);
    expectError(
      t,
      await api('POST', '/api/datasets/alice/connected/predict/batch', { modelId: `ul://alice/p/${model.model}` }),
      409,
      off,
    );
    const trainArgs = { model: 'yolo11n.yaml', data: 'ul://alice/datasets/connected', epochs: 1 };
    expectError(
      t,
      await api('POST', '/api/training/start', { modelId: model.id, trainArgs, gpuType: 'cpu' }),
      409,
      off,
    );
    t.strictSame(await counts(), before, 'no job was queued');

    t.equal((await api('PATCH', `/api/integrations/buckets/${integration.id}`, { processing: true })).status, 200);
    const analysis = await api<{ jobId: string }>('POST', '/api/datasets/alice/connected/embeddings');
    t.equal(analysis.status, 202, 'the analysis is queued');
    // No worker host in this world: training gets as far as placement (503), past the processing check.
    expectError(
      t,
      await api('POST', '/api/training/start', { modelId: model.id, trainArgs, gpuType: 'cpu' }),
      503,
      'No worker host is connected',
    );
  },
);

t.test('a disconnected integration: AI features on its dataset are 409 saying so', async (t) => {
  await api('DELETE', '/api/datasets/alice/connected/embeddings');
  t.equal((await api('DELETE', `/api/integrations/buckets/${integration.id}`)).status, 200);
  const read = DatasetRead.parse((await api('GET', '/api/datasets/alice/connected')).body);
  t.equal(read.dataset.integrationStatus, 'disconnected');
  expectError(
    t,
    await api('GET', `/api/images/${connectedImages[1].id}/similar`),
    409,
    /was disconnected; its files are unavailable/,
  );
});
