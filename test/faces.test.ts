// Face blur (blurFaces) with the real face detector (installer/models/build-models.sh's face-detector.onnx) on a photo
// with a face (scikit-image's astronaut, public domain): the detector finds it in the original and nothing in what the
// dataset stores, on ingest and by the job that turning the setting on queues; a picture without faces is kept as is.
import { readFileSync } from 'node:fs';
import { loadConfig } from '@vp/config';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { blurFaces } from '../control-plane/src/faces/face-blur.ts';
import { FaceDetector } from '../control-plane/src/faces/face-detector.ts';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { expectError } from './helpers/expect.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const astronaut = readFileSync(new URL('./fixtures/astronaut.jpg', import.meta.url));
const detector = new FaceDetector(loadConfig({}).faceDetectorPath);
t.teardown(() => detector.close());

const facesIn = async (bytes: Buffer) => (await detector.detect(bytes)).faces.length;
const download = async (url: string) => Buffer.from(await (await fetch(url)).arrayBuffer());

/** Each stored image of the dataset and its thumbnail, by name. */
async function stored(world: World, key: string, slug: string) {
  const listing = await call<{ images: Array<{ id: string; name: string }> }>(
    world.server,
    'GET',
    `/api/datasets/alice/${slug}/images?limit=100`,
    { key },
  );
  const files = new Map<string, { image: Buffer; thumbnail: Buffer }>();
  for (const { id, name } of listing.body.images) {
    const read = await call<{ imageUrl: string; thumbnailUrl: string }>(world.server, 'GET', `/api/images/${id}`, {
      key,
    });
    files.set(name, { image: await download(read.body.imageUrl), thumbnail: await download(read.body.thumbnailUrl) });
  }
  return files;
}

async function checkBlurred(t: Test, files: Map<string, { image: Buffer; thumbnail: Buffer }>) {
  const face = files.get('astronaut.jpg')!;
  t.equal(await facesIn(face.image), 0, 'no face left in the stored image');
  t.equal(await facesIn(face.thumbnail), 0, 'no face left in the thumbnail');
  const meta = await sharp(face.image).metadata();
  t.match(meta, { format: 'jpeg', width: 512, height: 512 }, 'stored in its format, same size (labels still fit)');
}

t.test('the detector finds the face in the original and its thumbnail', async (t) => {
  t.ok(loadConfig({}).faceDetectorPath, 'a face-detector.onnx was built (installer/models/build-models.sh)');
  t.equal(await facesIn(astronaut), 1);
  t.equal(
    await facesIn(await sharp(astronaut).resize(256).webp({ quality: 75 }).toBuffer()),
    1,
    'found at thumbnail size too',
  );
});

t.test(
  'ingest into a dataset with blurFaces stores blurred images and thumbnails; a picture without faces is unchanged',
  async (t) => {
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'people', name: 'People', blurFaces: true });
    const plain = await shapeImage({ width: 96, height: 64 });
    const zip = await zipOf({ 'images/train/astronaut.jpg': astronaut, 'images/train/plain.png': plain.bytes });
    const job = await ingestArchive(t, world, world.alice, 'alice', 'people', datasetId, 'people.zip', zip);
    t.equal(job.status, 'completed', JSON.stringify(job.error));
    t.match(job.result, { imagesAdded: 2 });
    const files = await stored(world, world.alice, 'people');
    await checkBlurred(t, files);
    t.ok(files.get('plain.png')!.image.equals(plain.bytes), 'an image without faces is stored byte for byte');
  },
);

t.test('turning blurFaces on blurs the images already there, through a job; other workspaces cannot', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'crew', name: 'Crew' });
  const plain = await shapeImage({ width: 96, height: 64 });
  const zip = await zipOf({ 'images/train/astronaut.jpg': astronaut, 'images/train/plain.png': plain.bytes });
  t.equal(
    (await ingestArchive(t, world, world.alice, 'alice', 'crew', datasetId, 'crew.zip', zip)).status,
    'completed',
  );
  t.equal(
    await facesIn((await stored(world, world.alice, 'crew')).get('astronaut.jpg')!.image),
    1,
    'without the setting the face is kept',
  );

  expectError(
    t,
    await call(world.server, 'PATCH', '/api/datasets/alice/crew', { key: world.bobby, body: { blurFaces: true } }),
    404,
  );
  const patched = await call<{ faceBlurJobId: string }>(world.server, 'PATCH', '/api/datasets/alice/crew', {
    key: world.alice,
    body: { blurFaces: true },
  });
  t.equal(patched.status, 200);
  t.ok(patched.body.faceBlurJobId, 'the job is named');
  expectError(t, await call(world.server, 'GET', `/api/jobs/${patched.body.faceBlurJobId}`, { key: world.bobby }), 404);
  expectError(
    t,
    await call(world.server, 'DELETE', `/api/jobs/${patched.body.faceBlurJobId}`, { key: world.bobby }),
    404,
  );
  const job = await waitForJob(t, world, world.alice, patched.body.faceBlurJobId);
  t.equal(job.status, 'completed', JSON.stringify(job.error));
  t.match(job.result, { imagesChecked: 2, imagesBlurred: 1, imagesUnchecked: 0 });
  t.match(job.progress, { processed: 2, total: 2 });
  const files = await stored(world, world.alice, 'crew');
  await checkBlurred(t, files);
  t.ok(files.get('plain.png')!.image.equals(plain.bytes), 'the image without faces is unchanged');

  const off = await call(world.server, 'PATCH', '/api/datasets/alice/crew', {
    key: world.alice,
    body: { blurFaces: false },
  });
  t.same(off.body, { success: true, dataset: 'crew' }, 'turning it off queues nothing');
  t.equal(
    await facesIn((await stored(world, world.alice, 'crew')).get('astronaut.jpg')!.image),
    0,
    'and does not un-blur: the original is not kept',
  );
  const again = await call<{ faceBlurJobId?: string }>(world.server, 'PATCH', '/api/datasets/alice/crew', {
    key: world.alice,
    body: { blurFaces: true },
  });
  const rerun = await waitForJob(t, world, world.alice, again.body.faceBlurJobId!);
  t.match(rerun.result, { imagesChecked: 0 }, 'images already checked are not checked again');
});

t.test('confidence is the score a face needs; boxScale widens or narrows what is blurred around it', async (t) => {
  t.equal((await detector.detect(astronaut, 0.25)).faces.length, 1);
  t.equal((await detector.detect(astronaut, 1)).faces.length, 0, 'no face scores over 1');
  t.equal(await blurFaces(detector, astronaut, { threshold: 1 }), null, 'nothing to blur then');
  const original = await sharp(astronaut).raw().toBuffer();
  const changed = async (boxScale: number) => {
    const blurred = await sharp((await blurFaces(detector, astronaut, { boxScale }))!.bytes)
      .raw()
      .toBuffer();
    let pixels = 0;
    for (let i = 0; i < original.length; i += 3)
      if (
        Math.abs(original[i] - blurred[i]) +
          Math.abs(original[i + 1] - blurred[i + 1]) +
          Math.abs(original[i + 2] - blurred[i + 2]) >
        30
      )
        pixels += 1;
    return pixels;
  };
  const [narrow, normal, wide] = [await changed(0.5), await changed(1), await changed(1.5)];
  t.ok(narrow < normal && normal < wide, `boxScale 0.5 < 1 < 1.5 in blurred pixels (${narrow}, ${normal}, ${wide})`);
});

// Batch face blur (POST /api/datasets/{owner}/{dataset}/predict/batch with operation blur): a preview changes nothing and
// shows per image what it would do; applying it gives the images exactly those files; an applied preview is spent.
interface BlurRun {
  id: string;
  operation?: string;
  preview?: boolean;
  confidence: number;
  boxScale: number;
  imageId?: string;
  failed: boolean;
  error: string | null;
  results: {
    processed: number;
    faces?: number;
    total: number;
    chargedCents: number | null;
    previews?: Array<{ imageId: string; imageUrl: string; thumbnailUrl?: string; faces: number }>;
  } | null;
}
type ImageRead = {
  id: string;
  properties: { hash: string; bytes: number };
  labels: unknown[];
  imageUrl: string;
  thumbnailUrl: string;
};

async function blurRun(t: Test, world: World, slug: string, body: Record<string, unknown>): Promise<BlurRun> {
  const path = `/api/datasets/alice/${slug}/predict/batch`;
  const started = await call<{ jobId: string }>(world.server, 'POST', path, {
    key: world.alice,
    body: { operation: 'blur', ...body },
  });
  t.equal(started.status, 202, JSON.stringify(started.body));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await call<{ activeJob: unknown; lastRun: BlurRun | null }>(world.server, 'GET', path, {
      key: world.alice,
    });
    if (answer.body.activeJob === null && answer.body.lastRun?.id === started.body.jobId) return answer.body.lastRun;
    if (Date.now() > deadline) throw new Error(`the blur run never finished: ${JSON.stringify(answer.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function imagesRead(world: World, slug: string): Promise<Map<string, ImageRead>> {
  const listing = await call<{ images: Array<{ id: string; name: string }> }>(
    world.server,
    'GET',
    `/api/datasets/alice/${slug}/images?limit=100`,
    { key: world.alice },
  );
  const reads = await Promise.all(
    listing.body.images.map(
      async ({ id, name }) =>
        [name, (await call<ImageRead>(world.server, 'GET', `/api/images/${id}`, { key: world.alice })).body] as const,
    ),
  );
  return new Map(reads);
}

const versionsOf = async (world: World, slug: string) =>
  (
    await call<{ dataset: { versions: unknown[] } }>(world.server, 'GET', `/api/datasets/alice/${slug}`, {
      key: world.alice,
    })
  ).body.dataset.versions.length;

t.test(
  'batch face blur: a preview changes nothing, applying it gives its images exactly what it showed, once',
  async (t) => {
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'crowd', name: 'Crowd' });
    const mirrored = await sharp(astronaut).flop().jpeg({ quality: 90 }).toBuffer();
    const plain = await shapeImage({ width: 96, height: 64 });
    const zip = await zipOf({
      'images/train/astronaut.jpg': astronaut,
      'images/train/mirrored.jpg': mirrored,
      'images/train/plain.png': plain.bytes,
    });
    t.equal(
      (await ingestArchive(t, world, world.alice, 'alice', 'crowd', datasetId, 'crowd.zip', zip)).status,
      'completed',
    );
    const before = await imagesRead(world, 'crowd');
    const labels = [{ classId: 0, bbox: [0.5, 0.4, 0.3, 0.4] }];
    await call(world.server, 'PATCH', '/api/datasets/alice/crowd', {
      key: world.alice,
      body: { classNames: ['person'] },
    });
    t.equal(
      (
        await call(world.server, 'PATCH', `/api/images/${before.get('astronaut.jpg')!.id}`, {
          key: world.alice,
          body: { labels },
        })
      ).status,
      200,
    );
    const versions = await versionsOf(world, 'crowd');
    const path = '/api/datasets/alice/crowd/predict/batch';

    for (const boxScale of [0.4, 1.6])
      expectError(
        t,
        await call(world.server, 'POST', path, { key: world.alice, body: { operation: 'blur', boxScale } }),
        400,
      );
    expectError(
      t,
      await call(world.server, 'POST', path, { key: world.bobby, body: { operation: 'blur', preview: true } }),
      404,
    );

    const preview = await blurRun(t, world, 'crowd', { preview: true });
    t.match(preview, {
      operation: 'blur',
      preview: true,
      confidence: 0.25,
      boxScale: 1,
      failed: false,
      results: { processed: 3, faces: 2, total: 3, chargedCents: null },
    });
    const shown = new Map(preview.results!.previews!.map((image) => [image.imageId, image]));
    t.equal(shown.size, 3, 'each previewed image is listed');
    const astronautPreview = shown.get(before.get('astronaut.jpg')!.id)!;
    t.equal(astronautPreview.faces, 1);
    t.equal(shown.get(before.get('plain.png')!.id)!.faces, 0);
    const previewBytes = await download(astronautPreview.imageUrl);
    t.equal(await facesIn(previewBytes), 0, 'the preview shows the face blurred');
    t.equal(await facesIn(await download(astronautPreview.thumbnailUrl!)), 0, 'and its thumbnail');
    const afterPreview = await imagesRead(world, 'crowd');
    for (const [name, image] of before) {
      t.equal(afterPreview.get(name)!.properties.hash, image.properties.hash, `${name}: the preview changed nothing`);
      t.ok(
        (await download(afterPreview.get(name)!.imageUrl)).equals(await download(image.imageUrl)),
        `${name}: the stored bytes are as they were`,
      );
    }
    t.equal(
      await facesIn(await download(afterPreview.get('astronaut.jpg')!.imageUrl)),
      1,
      'the face is still in the stored image',
    );

    const other = await call(world.server, 'POST', path, {
      key: world.alice,
      body: { operation: 'blur', previewJobId: preview.id, confidence: 0.5 },
    });
    expectError(t, other, 400);
    t.match((other.body as { error: string }).error, /confidence 0.25/);
    expectError(
      t,
      await call(world.server, 'POST', path, {
        key: world.alice,
        body: { operation: 'blur', previewJobId: preview.id, preview: true },
      }),
      400,
    );

    const applied = await blurRun(t, world, 'crowd', { previewJobId: preview.id });
    t.match(applied, {
      operation: 'blur',
      preview: false,
      failed: false,
      results: { processed: 3, faces: 2, total: 3 },
    });
    const after = await imagesRead(world, 'crowd');
    const blurred = after.get('astronaut.jpg')!;
    const blurredBytes = await download(blurred.imageUrl);
    t.ok(blurredBytes.equals(previewBytes), 'the image got exactly the file the preview showed');
    t.not(blurred.properties.hash, before.get('astronaut.jpg')!.properties.hash, 'a new hash');
    t.equal(blurred.properties.bytes, blurredBytes.length, 'its size is the new file’s');
    t.equal(await facesIn(await download(blurred.thumbnailUrl)), 0, 'its thumbnail is blurred too');
    t.equal(
      await facesIn(await download(after.get('mirrored.jpg')!.imageUrl)),
      0,
      'every previewed image with a face is blurred',
    );
    t.equal(
      after.get('plain.png')!.properties.hash,
      before.get('plain.png')!.properties.hash,
      'the image without a face is unchanged',
    );
    t.same(blurred.labels.length, 1, 'labels are never changed');
    t.equal(await versionsOf(world, 'crowd'), versions, 'no version is saved');

    const again = await call(world.server, 'POST', path, {
      key: world.alice,
      body: { operation: 'blur', previewJobId: preview.id },
    });
    expectError(t, again, 409);
    t.match((again.body as { error: string }).error, /applied already/);
    expectError(t, await call(world.server, 'DELETE', `${path}?previewJobId=${preview.id}`, { key: world.alice }), 409);
  },
);

t.test(
  'batch face blur: imageId limits the run to that image; DELETE with previewJobId discards a preview',
  async (t) => {
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'pair', name: 'Pair' });
    const mirrored = await sharp(astronaut).flop().jpeg({ quality: 90 }).toBuffer();
    const zip = await zipOf({ 'images/train/astronaut.jpg': astronaut, 'images/train/mirrored.jpg': mirrored });
    t.equal(
      (await ingestArchive(t, world, world.alice, 'alice', 'pair', datasetId, 'pair.zip', zip)).status,
      'completed',
    );
    const before = await imagesRead(world, 'pair');
    const path = '/api/datasets/alice/pair/predict/batch';

    const preview = await blurRun(t, world, 'pair', { preview: true });
    const discarded = await call(world.server, 'DELETE', `${path}?previewJobId=${preview.id}`, { key: world.alice });
    t.same(discarded.body, { action: 'dismissed', jobId: preview.id });
    const status = await call<{ lastRun: unknown }>(world.server, 'GET', path, { key: world.alice });
    t.equal(status.body.lastRun, null, 'the discarded preview is dismissed');
    expectError(
      t,
      await call(world.server, 'POST', path, {
        key: world.alice,
        body: { operation: 'blur', previewJobId: preview.id },
      }),
      409,
    );
    expectError(
      t,
      await call(world.server, 'DELETE', `${path}?previewJobId=${'0'.repeat(24)}`, { key: world.alice }),
      404,
    );
    expectError(
      t,
      await call(world.server, 'POST', path, {
        key: world.alice,
        body: { operation: 'blur', imageId: '0'.repeat(24) },
      }),
      404,
    );

    const one = before.get('mirrored.jpg')!.id;
    const run = await blurRun(t, world, 'pair', { imageId: one });
    t.match(run, { imageId: one, results: { processed: 1, faces: 1, total: 1 } });
    const after = await imagesRead(world, 'pair');
    t.equal(await facesIn(await download(after.get('mirrored.jpg')!.imageUrl)), 0, 'the named image is blurred');
    t.equal(
      after.get('astronaut.jpg')!.properties.hash,
      before.get('astronaut.jpg')!.properties.hash,
      'the other is untouched',
    );
    t.equal(await facesIn(await download(after.get('astronaut.jpg')!.imageUrl)), 1);
  },
);

t.test('batch face blur without a face detector installed: 503 saying so, nothing queued', async (t) => {
  const world = await startWorld(t, { FACE_DETECTOR_PATH: '/nonexistent/face-detector.onnx' });
  const datasetId = await createDataset(world, world.alice, { dataset: 'nodetector', name: 'No detector' });
  const zip = await zipOf({ 'images/train/astronaut.jpg': astronaut });
  t.equal(
    (await ingestArchive(t, world, world.alice, 'alice', 'nodetector', datasetId, 'one.zip', zip)).status,
    'completed',
  );
  const answer = await call(world.server, 'POST', '/api/datasets/alice/nodetector/predict/batch', {
    key: world.alice,
    body: { operation: 'blur', preview: true },
  });
  expectError(t, answer, 503, /no face detector/);
  t.same((await call(world.server, 'GET', '/api/datasets/alice/nodetector/predict/batch', { key: world.alice })).body, {
    activeJob: null,
    lastRun: null,
  });
});
