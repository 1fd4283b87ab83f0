// Face blur (blurFaces) with the real face detector (installer/models/build-models.sh's face-detector.onnx) on a photo
// with a face (scikit-image's astronaut, public domain): the detector finds it in the original and nothing in what the
// dataset stores, on ingest and by the job that turning the setting on queues; a picture without faces is kept as is.
import { readFileSync } from 'node:fs';
import { loadConfig } from '@vp/config';
import sharp from 'sharp';
import t, { type Test } from 'tap';
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
  const listing = await call<{ images: Array<{ id: string; name: string }> }>(world.server, 'GET', `/api/datasets/alice/${slug}/images?limit=100`, { key });
  const files = new Map<string, { image: Buffer; thumbnail: Buffer }>();
  for (const { id, name } of listing.body.images) {
    const read = await call<{ imageUrl: string; thumbnailUrl: string }>(world.server, 'GET', `/api/images/${id}`, { key });
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
  t.equal(await facesIn(await sharp(astronaut).resize(256).webp({ quality: 75 }).toBuffer()), 1, 'found at thumbnail size too');
});

t.test('ingest into a dataset with blurFaces stores blurred images and thumbnails; a picture without faces is unchanged', async (t) => {
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
});

t.test('turning blurFaces on blurs the images already there, through a job; other workspaces cannot', async (t) => {
  const world = await startWorld(t);
  const datasetId = await createDataset(world, world.alice, { dataset: 'crew', name: 'Crew' });
  const plain = await shapeImage({ width: 96, height: 64 });
  const zip = await zipOf({ 'images/train/astronaut.jpg': astronaut, 'images/train/plain.png': plain.bytes });
  t.equal((await ingestArchive(t, world, world.alice, 'alice', 'crew', datasetId, 'crew.zip', zip)).status, 'completed');
  t.equal(await facesIn((await stored(world, world.alice, 'crew')).get('astronaut.jpg')!.image), 1, 'without the setting the face is kept');

  expectError(t, await call(world.server, 'PATCH', '/api/datasets/alice/crew', { key: world.bobby, body: { blurFaces: true } }), 404);
  const patched = await call<{ faceBlurJobId: string }>(world.server, 'PATCH', '/api/datasets/alice/crew', { key: world.alice, body: { blurFaces: true } });
  t.equal(patched.status, 200);
  t.ok(patched.body.faceBlurJobId, 'the job is named');
  expectError(t, await call(world.server, 'GET', `/api/jobs/${patched.body.faceBlurJobId}`, { key: world.bobby }), 404);
  expectError(t, await call(world.server, 'DELETE', `/api/jobs/${patched.body.faceBlurJobId}`, { key: world.bobby }), 404);
  const job = await waitForJob(t, world, world.alice, patched.body.faceBlurJobId);
  t.equal(job.status, 'completed', JSON.stringify(job.error));
  t.match(job.result, { imagesChecked: 2, imagesBlurred: 1, imagesUnchecked: 0 });
  t.match(job.progress, { processed: 2, total: 2 });
  const files = await stored(world, world.alice, 'crew');
  await checkBlurred(t, files);
  t.ok(files.get('plain.png')!.image.equals(plain.bytes), 'the image without faces is unchanged');

  const off = await call(world.server, 'PATCH', '/api/datasets/alice/crew', { key: world.alice, body: { blurFaces: false } });
  t.same(off.body, { success: true, dataset: 'crew' }, 'turning it off queues nothing');
  t.equal(await facesIn((await stored(world, world.alice, 'crew')).get('astronaut.jpg')!.image), 0, 'and does not un-blur: the original is not kept');
  const again = await call<{ faceBlurJobId?: string }>(world.server, 'PATCH', '/api/datasets/alice/crew', { key: world.alice, body: { blurFaces: true } });
  const rerun = await waitForJob(t, world, world.alice, again.body.faceBlurJobId!);
  t.match(rerun.result, { imagesChecked: 0 }, 'images already checked are not checked again');
});
