// POST /api/images/{imageId}/predict: a trained model's predictions on a dataset image, as labels of the dataset, equal
// to what ultralytics predicts with the same export (converted here on its own), never saved; and the 400/404/409/422
// answers of the spec.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { waitForJob } from './helpers/archives.ts';
import {
  generatorPictures,
  imagesOf,
  picturesDataset,
  uploadFixtureModel,
  type Picture,
  type UploadedModel,
} from './helpers/auto-annotate.ts';
import { FixturePredictor } from './helpers/fixture-predictor.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { createModel } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';
import { runCommand, trainerEnv, TRAINER_VENV } from './helpers/yolo-models.ts';

interface Predicted {
  success: true;
  predictions: Array<{ classId: number; bbox?: number[]; segments?: number[] }>;
  confidences: number[];
  modelUsed: string;
  inferenceTime: number;
}

interface Reference {
  shape: [number, number];
  boxes: number[][];
  conf: number[];
  cls: number[];
  polygons?: number[][];
}

const predictor = new FixturePredictor();
t.teardown(() => predictor.close());
const world = await startWorld(t, {}, { predictor });
const server = world.server;
const NAMES = ['square', 'disc', 'triangle'];
const pictures = await generatorPictures('detect', 4);
const detector: UploadedModel = await uploadFixtureModel(
  world,
  predictor,
  world.alice,
  'alice',
  'vision',
  'detector',
  'detect',
);
await picturesDataset(t, world, world.alice, 'alice', 'shapes', { task: 'detect', classNames: NAMES }, pictures);
const images = await imagesOf(world, world.alice, 'alice', 'shapes');

const predict = (imageId: string, body: Record<string, unknown>, key = world.alice) =>
  call<Predicted & { error?: string; code?: string; unmatchedClasses?: string[] }>(
    server,
    'POST',
    `/api/images/${imageId}/predict`,
    { key, body },
  );
// The picture with the most predictions: the one the tests below look at (and put in their other datasets).
const counts = await Promise.all(
  images.map(async (image) => (await predict(image.id, { modelId: detector.uri })).body.predictions.length),
);
const busiest = counts.indexOf(Math.max(...counts));
const shown = images[busiest];
const shownPicture = [pictures.find((picture) => picture.name === shown.name)!];

/** ultralytics' own predict with the export, per picture (test/inference/ultralytics_reference.py). */
async function reference(
  onnx: string,
  task: string,
  args: { conf: number; iou: number; imgsz: number },
  given: Picture[] = pictures,
): Promise<Reference[]> {
  const dir = mkdtempSync(join(tmpdir(), 'vp-reference-'));
  try {
    const files = given.map((picture) => {
      const file = join(dir, picture.name);
      writeFileSync(file, picture.bytes);
      return file;
    });
    const out = await runCommand(
      join(TRAINER_VENV, 'bin/python'),
      ['test/inference/ultralytics_reference.py', 'predict', onnx, task, '--runs', JSON.stringify([args]), ...files],
      {
        cwd: process.cwd(),
        env: trainerEnv(join(dir, 'settings')),
      },
    );
    return (JSON.parse(out) as Reference[][])[0];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const round5 = (value: number) => Math.round(value * 1e5) / 1e5;

t.test(
  'the predictions are ultralytics predict results of the same export as normalized [cx, cy, w, h] labels',
  async (t) => {
    const expected = await reference(detector.onnx, 'detect', { conf: 0.25, iou: 0.7, imgsz: detector.imgsz });
    t.ok(
      expected.some((result) => result.boxes.length > 0),
      'the model finds shapes in the pictures',
    );
    for (const [index, picture] of pictures.entries()) {
      const image = images.find((row) => row.name === picture.name)!;
      const answer = await predict(image.id, { modelId: detector.uri });
      t.equal(answer.status, 200, picture.name);
      const { shape, boxes, conf, cls } = expected[index];
      const [height, width] = shape;
      t.equal(answer.body.predictions.length, boxes.length, `${picture.name}: as many labels as ultralytics has boxes`);
      boxes.forEach(([x1, y1, x2, y2], row) => {
        const label = answer.body.predictions[row];
        t.equal(label.classId, cls[row], `${picture.name}[${row}] class (the dataset names are the model's, in order)`);
        const want = [(x1 + x2) / 2 / width, (y1 + y2) / 2 / height, (x2 - x1) / width, (y2 - y1) / height].map(round5);
        label.bbox!.forEach((value, i) =>
          t.ok(Math.abs(value - want[i]) <= 2e-5, `${picture.name}[${row}].bbox[${i}] ${value} ≈ ${want[i]}`),
        );
        t.ok(Math.abs(answer.body.confidences[row] - conf[row]) < 1e-4, `${picture.name}[${row}] confidence`);
      });
      t.equal(answer.body.modelUsed, detector.uri);
      t.type(answer.body.inferenceTime, 'number');
    }
    const after = await imagesOf(world, world.alice, 'alice', 'shapes');
    t.ok(
      after.every((image) => image.labelCount === 0),
      'nothing was saved',
    );
  },
);

t.test(
  "a segment model's polygons are ultralytics' masks.xy of the same export, normalized, with their boxes",
  async (t) => {
    const segmenter = await uploadFixtureModel(
      world,
      predictor,
      world.alice,
      'alice',
      'vision',
      'segmenter',
      'segment',
    );
    const outlines = await generatorPictures('segment', 3);
    await picturesDataset(
      t,
      world,
      world.alice,
      'alice',
      'seg-shapes',
      { task: 'segment', classNames: NAMES },
      outlines,
    );
    const segImages = await imagesOf(world, world.alice, 'alice', 'seg-shapes');
    const expected = await reference(
      segmenter.onnx,
      'segment',
      { conf: 0.25, iou: 0.7, imgsz: segmenter.imgsz },
      outlines,
    );
    let compared = 0;
    for (const [index, picture] of outlines.entries()) {
      const image = segImages.find((row) => row.name === picture.name)!;
      const answer = await predict(image.id, { modelId: segmenter.uri });
      t.equal(answer.status, 200);
      const { shape, boxes, polygons, conf } = expected[index];
      const [height, width] = shape;
      const kept = (polygons ?? [])
        .map((polygon, row) => ({ polygon, row }))
        .filter(({ polygon }) => polygon.length >= 6);
      t.equal(answer.body.predictions.length, kept.length, `${picture.name}: a label per non-empty mask`);
      for (const [i, { polygon, row }] of kept.entries()) {
        const label = answer.body.predictions[i];
        const want = polygon.map((value, j) =>
          round5(Math.min(1, Math.max(0, value / (j % 2 === 0 ? width : height)))),
        );
        t.equal(label.segments!.length, want.length, `${picture.name}[${row}]: the same vertices`);
        t.ok(
          label.segments!.every((value, j) => Math.abs(value - want[j]) <= 2e-5),
          `${picture.name}[${row}]: polygon`,
        );
        const [x1, , x2] = boxes[row];
        t.ok(Math.abs(label.bbox![2] - round5((x2 - x1) / width)) <= 2e-5, `${picture.name}[${row}]: box width`);
        t.ok(Math.abs(answer.body.confidences[i] - conf[row]) < 1e-4, `${picture.name}[${row}]: confidence`);
        compared += 1;
      }
    }
    t.ok(compared > 0, 'the model outlines shapes');
  },
);

t.test('the predictions pass PATCH as they are; the model id works like its URI; confidence filters', async (t) => {
  const image = shown;
  const byUri = await predict(image.id, { modelId: detector.uri });
  const byId = await predict(image.id, { modelId: detector.id });
  t.same(byId.body.predictions, byUri.body.predictions);
  t.ok(byUri.body.predictions.length > 0);
  const saved = await call(server, 'PATCH', `/api/images/${image.id}`, {
    key: world.alice,
    body: { labels: byUri.body.predictions },
  });
  t.equal(saved.status, 200, 'saved through the label checks');
  t.same((saved.body as { labels: unknown }).labels, byUri.body.predictions, 'saved unchanged (already rounded)');
  await call(server, 'PATCH', `/api/images/${image.id}`, { key: world.alice, body: { labels: [] } });
  const strict = await predict(image.id, { modelId: detector.uri, confidence: 1 });
  t.same(strict.body.predictions, [], 'nothing reaches confidence 1');
});

t.test(
  'classMapping: a dataset index per model class, null drops the class; wrong length or range is 400',
  async (t) => {
    const image = shown;
    const plain = await predict(image.id, { modelId: detector.uri });
    const mapped = await predict(image.id, { modelId: detector.uri, classMapping: [2, null, 0] });
    t.equal(mapped.status, 200);
    const expected = plain.body.predictions.flatMap((label, i) => {
      const to = [2, null, 0][label.classId];
      return to === null ? [] : [{ label: { ...label, classId: to }, confidence: plain.body.confidences[i] }];
    });
    t.same(
      mapped.body.predictions,
      expected.map((entry) => entry.label),
    );
    t.same(
      mapped.body.confidences,
      expected.map((entry) => entry.confidence),
    );
    const short = await predict(image.id, { modelId: detector.uri, classMapping: [0, 1] });
    t.equal(short.status, 400);
    t.match(short.body.error, /classMapping: has 2 entries; the model has 3 classes/);
    const far = await predict(image.id, { modelId: detector.uri, classMapping: [0, 1, 3] });
    t.equal(far.status, 400);
    t.match(far.body.error, /classMapping\[2\]: 3 is out of range/);
  },
);

t.test('bad bodies are 400', async (t) => {
  const image = shown;
  for (const body of [
    {},
    { modelId: detector.uri, confidence: 0 },
    { modelId: detector.uri, iou: 0.96 },
    { modelId: 'yolo11n.pt' },
    { modelId: detector.uri, extra: 1 },
  ]) {
    const answer = await predict(image.id, body);
    t.equal(answer.status, 400, JSON.stringify(body));
    t.type(answer.body.error, 'string');
  }
});

t.test('class mismatch is 422 naming the model classes the dataset lacks', async (t) => {
  await picturesDataset(
    t,
    world,
    world.alice,
    'alice',
    'pets',
    { task: 'detect', classNames: ['Square', 'cat'] },
    shownPicture,
  );
  const [image] = await imagesOf(world, world.alice, 'alice', 'pets');
  const answer = await predict(image.id, { modelId: detector.uri });
  t.equal(answer.status, 422);
  t.match(answer.body.error, /Class mismatch: the model's classes "disc", "triangle" have no dataset class/);
  t.same(answer.body.unmatchedClasses, ['disc', 'triangle'], '"square" matched "Square": case is ignored');
  const mapped = await predict(image.id, { modelId: detector.uri, classMapping: [0, null, null] });
  t.equal(mapped.status, 200, 'a classMapping resolves it');
  t.ok(mapped.body.predictions.every((label) => label.classId === 0));
});

t.test('hosted class-prompted and provider models are 422 on this appliance', async (t) => {
  const image = shown;
  const hosted = await predict(image.id, { modelId: 'yoloe26x' });
  t.equal(hosted.status, 422);
  t.match(hosted.body.error, /runs only on the hosted service/);
  const provider = await predict(image.id, { modelId: 'gpt-6-astra' });
  t.equal(provider.status, 422);
  t.equal(provider.body.code, 'missing_provider_api_key');
  await picturesDataset(
    t,
    world,
    world.alice,
    'alice',
    'outlines',
    { task: 'segment', classNames: NAMES },
    shownPicture,
  );
  const [outline] = await imagesOf(world, world.alice, 'alice', 'outlines');
  const prompted = await predict(outline.id, { modelId: 'sam3' });
  t.equal(prompted.status, 422);
  t.match(prompted.body.error, /detection datasets only/);
});

t.test('task fit: a detect model labels a segment dataset with rectangles; a pose dataset is 422', async (t) => {
  const [outline] = await imagesOf(world, world.alice, 'alice', 'outlines');
  const answer = await predict(outline.id, { modelId: detector.uri });
  t.equal(answer.status, 200);
  t.ok(answer.body.predictions.length > 0);
  for (const label of answer.body.predictions) t.equal(label.segments!.length, 8, 'a box as 4 corners');
  await picturesDataset(t, world, world.alice, 'alice', 'poses', { task: 'pose', classNames: NAMES }, shownPicture);
  const [pose] = await imagesOf(world, world.alice, 'alice', 'poses');
  const refused = await predict(pose.id, { modelId: detector.uri });
  t.equal(refused.status, 422);
  t.match(refused.body.error, /A detect model cannot label a pose dataset/);
});

t.test('depth datasets are 400; images of more than 3 channels 409; a model without weights 409', async (t) => {
  await picturesDataset(
    t,
    world,
    world.alice,
    'alice',
    'deep',
    { task: 'detect', classNames: NAMES },
    pictures.slice(0, 2),
  );
  const [first, second] = await imagesOf(world, world.alice, 'alice', 'deep');
  const em = server.services().em;
  await query(em, 'update images set channels = 4 where id = ?', [second.id]);
  const channels = await predict(second.id, { modelId: detector.uri });
  t.equal(channels.status, 409);
  t.match(channels.body.error, /4 channels/);
  const { id: empty } = await createModel(world, world.alice, { project: 'vision', model: 'empty', task: 'detect' });
  const unweighted = await predict(first.id, { modelId: empty });
  t.equal(unweighted.status, 409);
  t.match(unweighted.body.error, /no weights/);
  await query(em, `update datasets set task = 'depth', class_names = '[]' where slug = 'deep'`);
  const depth = await predict(first.id, { modelId: detector.uri });
  t.equal(depth.status, 400);
  t.match(depth.body.error, /Depth datasets/);
});

t.test("other workspaces' images and private models are 404; a viewer may predict", async (t) => {
  const image = shown;
  const stranger = await predict(image.id, { modelId: detector.uri }, world.bobby);
  t.equal(stranger.status, 404);
  t.match(stranger.body.error, /Image .* not found/);
  await createDataset(world, world.bobby, { dataset: 'mine', name: 'mine', classNames: NAMES });
  await picturesDataset(
    t,
    world,
    world.bobby,
    'bobby',
    'bob-shapes',
    { task: 'detect', classNames: NAMES },
    shownPicture,
  );
  const [bobImage] = await imagesOf(world, world.bobby, 'bobby', 'bob-shapes');
  const privateModel = await predict(bobImage.id, { modelId: detector.uri }, world.bobby);
  t.equal(privateModel.status, 404, "alice's private model is not bob's to run");
  const byId = await predict(bobImage.id, { modelId: detector.id }, world.bobby);
  t.equal(byId.status, 404, 'nor by its id');
  const anonymous = await call(server, 'POST', `/api/images/${image.id}/predict`, { body: { modelId: detector.uri } });
  t.equal(anonymous.status, 401);
});

t.test(
  "with the server's own predictor (the model's automatic ONNX export, the inference pool) the answers are the same",
  async (t) => {
    const own = await startWorld(t);
    const model = await uploadFixtureModel(own, null, own.alice, 'alice', 'vision', 'detector', 'detect');
    await seedOnnxExport(own.server, model.id, model.onnx);
    await picturesDataset(t, own, own.alice, 'alice', 'shapes', { task: 'detect', classNames: NAMES }, pictures);
    const ownImages = await imagesOf(own, own.alice, 'alice', 'shapes');
    for (const image of ownImages) {
      const mine = await call<Predicted>(own.server, 'POST', `/api/images/${image.id}/predict`, {
        key: own.alice,
        body: { modelId: model.uri },
      });
      t.equal(mine.status, 200, image.name);
      const fixture = await predict(images.find((row) => row.name === image.name)!.id, { modelId: detector.uri });
      t.same(mine.body.predictions, fixture.body.predictions, `${image.name}: the same labels`);
      t.same(mine.body.confidences, fixture.body.confidences, `${image.name}: the same confidences`);
    }
    await own.server.services().billing.grant('alice', 1000, 'tests');
    const started = await call<{ jobId: string }>(own.server, 'POST', '/api/datasets/alice/shapes/predict/batch', {
      key: own.alice,
      body: { modelId: model.uri },
    });
    t.equal(started.status, 202);
    const job = await waitForJob(t, own, own.alice, started.body.jobId);
    t.equal(job.status, 'completed', 'the batch run completes with the real predictor');
    t.match(job.result, { processed: ownImages.length });
  },
);
