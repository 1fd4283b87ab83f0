// Batch auto-annotation (POST/GET/DELETE /api/datasets/{owner}/{dataset}/predict/batch): a version is saved first, the
// unlabeled images get the labels single-image predict gives them, labeled images are never changed, progress shows,
// a cancel stops the run at once and only processed images are charged; and the 400/402/403/409/422 answers.
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import {
  generatorPictures,
  imagesOf,
  picturesDataset,
  uploadFixtureModel,
  type Picture,
  type UploadedModel,
} from './helpers/auto-annotate.ts';
import { checkDatasetInvariants } from './helpers/dataset-invariants.ts';
import { FixturePredictor } from './helpers/fixture-predictor.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Label {
  classId: number;
  bbox?: number[];
}

interface Status {
  activeJob: null | {
    id: string;
    stopping: boolean;
    progress: { processed: number; total: number };
    datasetVersion: number | null;
    modelId: string;
  };
  lastRun: null | {
    id: string;
    failed: boolean;
    stopped: boolean;
    error: string | null;
    datasetVersion: number | null;
    results: {
      processed: number;
      annotations: number;
      classes: number;
      total: number;
      chargedCents: number | null;
    } | null;
  };
}

const CENTS_PER_IMAGE = 10;
const predictor = new FixturePredictor();
t.teardown(() => predictor.close());
const world = await startWorld(
  t,
  { BATCH_PREDICT_CENTS_PER_IMAGE: String(CENTS_PER_IMAGE), BILLING_ENFORCED: 'true' },
  { predictor },
);
const { server } = world;
const NAMES = ['square', 'disc', 'triangle'];
const pictures: Picture[] = await generatorPictures('detect', 5);
const detector: UploadedModel = await uploadFixtureModel(
  world,
  predictor,
  world.alice,
  'alice',
  'vision',
  'detector',
  'detect',
);
await server.services().billing.grant('alice', 10_000, 'tests');

const path = (slug: string, owner = 'alice') => `/api/datasets/${owner}/${slug}/predict/batch`;
const start = (slug: string, body: Record<string, unknown>, key = world.alice, owner = 'alice') =>
  call<{ jobId: string; error?: string; code?: string }>(server, 'POST', path(slug, owner), { key, body });
const status = async (slug: string) => {
  const answer = await call<Status>(server, 'GET', path(slug), { key: world.alice });
  if (answer.status !== 200) throw new Error(`GET batch: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
};
const labelsOf = async (imageId: string) =>
  (await call<{ labels: Label[] }>(server, 'GET', `/api/images/${imageId}`, { key: world.alice })).body.labels;
const singlePredict = async (imageId: string) =>
  (
    await call<{ predictions: Label[] }>(server, 'POST', `/api/images/${imageId}/predict`, {
      key: world.alice,
      body: { modelId: detector.uri },
    })
  ).body.predictions;
const balance = async () =>
  server
    .services()
    .billing.balanceCents(
      (await query<{ id: string }>(server.services().em, `select id from workspaces where handle = 'alice'`))[0].id,
    );

/** GET until `done` says so (30 s at most). */
async function until(slug: string, done: (answer: Status) => boolean): Promise<Status> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer = await status(slug);
    if (done(answer)) return answer;
    if (Date.now() > deadline) throw new Error(`batch status never got there: ${JSON.stringify(answer)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
const finished = (slug: string) => until(slug, (answer) => answer.activeJob === null && answer.lastRun !== null);

const datasetId = await picturesDataset(
  t,
  world,
  world.alice,
  'alice',
  'shapes',
  { task: 'detect', classNames: NAMES },
  pictures,
);
const images = await imagesOf(world, world.alice, 'alice', 'shapes');
const handLabeled = images[0];
const HAND_LABELS: Label[] = [{ classId: 2, bbox: [0.5, 0.5, 0.25, 0.25] }];
await call(server, 'PATCH', `/api/images/${handLabeled.id}`, { key: world.alice, body: { labels: HAND_LABELS } });

t.test(
  'a run saves a version, then labels each unlabeled image as single-image predict does; labeled images stay as they were',
  async (t) => {
    const expected = new Map<string, Label[]>();
    for (const image of images.slice(1)) expected.set(image.id, await singlePredict(image.id));
    const annotations = [...expected.values()].reduce((sum, labels) => sum + labels.length, 0);
    t.ok(annotations > 0, 'the model finds shapes');
    const versionsBefore = (
      await call<{ dataset: { versions: unknown[] } }>(server, 'GET', '/api/datasets/alice/shapes', {
        key: world.alice,
      })
    ).body.dataset.versions.length;
    const before = await balance();

    const started = await start('shapes', { modelId: detector.uri });
    t.equal(started.status, 202);
    t.match(started.body, { jobId: /^[0-9a-f]{24}$/ });
    const { lastRun } = await finished('shapes');
    t.match(lastRun, { id: started.body.jobId, failed: false, stopped: false, error: null });
    t.same(lastRun!.results, {
      processed: 4,
      annotations,
      classes: new Set([...expected.values()].flat().map((label) => label.classId)).size,
      total: 4,
      chargedCents: 4 * CENTS_PER_IMAGE,
    });

    for (const [imageId, labels] of expected)
      t.same(await labelsOf(imageId), labels, `image ${imageId}: the single-predict labels`);
    t.same(await labelsOf(handLabeled.id), HAND_LABELS, 'the labeled image is untouched');

    const read = await call<{
      dataset: { versions: Array<{ version: number; annotationCount: number; imageCount: number }> };
    }>(server, 'GET', '/api/datasets/alice/shapes', { key: world.alice });
    t.equal(read.body.dataset.versions.length, versionsBefore + 1, 'one version saved');
    t.match(
      read.body.dataset.versions.at(-1),
      { version: lastRun!.datasetVersion, annotationCount: 1, imageCount: 5 },
      'it holds the dataset as it was before labeling',
    );
    t.equal(await balance(), before - 4 * CENTS_PER_IMAGE, 'charged per processed image');
    await checkDatasetInvariants(t, server, datasetId);
  },
);

t.test('includeAnnotated runs on every image; predictions are added after the labels already there', async (t) => {
  const expected = await singlePredict(handLabeled.id);
  const others = new Map<string, Label[]>();
  for (const image of images.slice(1)) others.set(image.id, await labelsOf(image.id));
  const started = await start('shapes', { modelId: detector.uri, includeAnnotated: true });
  t.equal(started.status, 202);
  const { lastRun } = await finished('shapes');
  t.equal(lastRun!.id, started.body.jobId, "the new run's summary replaced the last one's");
  t.equal(lastRun!.results!.processed, 5);
  t.same(await labelsOf(handLabeled.id), [...HAND_LABELS, ...expected], 'hand labels first, unchanged');
  for (const [imageId, labels] of others) {
    const now = await labelsOf(imageId);
    t.same(now.slice(0, labels.length), labels, `image ${imageId}: its labels kept as they were`);
  }
  await checkDatasetInvariants(t, server, datasetId);
});

t.test('DELETE on a finished run dismisses its summary; then there is nothing to do', async (t) => {
  const { lastRun } = await status('shapes');
  const dismissed = await call(server, 'DELETE', path('shapes'), { key: world.alice });
  t.same(dismissed.body, { action: 'dismissed', jobId: lastRun!.id });
  t.same(await status('shapes'), { activeJob: null, lastRun: null });
  const none = await call(server, 'DELETE', path('shapes'), { key: world.alice });
  t.same(none.body, { action: 'none', jobId: null });
});

t.test(
  'progress shows while a run works; a cancel stops it at once and charges only the processed images',
  async (t) => {
    const manyId = await picturesDataset(
      t,
      world,
      world.alice,
      'alice',
      'many',
      { task: 'detect', classNames: NAMES },
      pictures,
    );
    const many = await imagesOf(world, world.alice, 'alice', 'many');
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = (predictor.runs.get(detector.id) ?? 0) + 1;
    // Admission runs the model once (the class check), the run twice; its third image's inference never ends until released.
    predictor.hold = (run) => (run >= first + 3 ? held : undefined);
    t.teardown(() => {
      predictor.hold = undefined;
      release();
    });
    const before = await balance();
    const started = await start('many', { modelId: detector.uri });
    t.equal(started.status, 202);
    const midway = await until(
      'many',
      (answer) => answer.activeJob?.progress.processed === 2 && (predictor.runs.get(detector.id) ?? 0) >= first + 3,
    );
    t.match(midway.activeJob, {
      id: started.body.jobId,
      stopping: false,
      progress: { processed: 2, total: 5 },
      modelId: detector.uri,
    });
    t.type(midway.activeJob!.datasetVersion, 'number');

    const again = await start('many', { modelId: detector.uri });
    t.equal(again.status, 409, 'one run at a time');
    t.match(again.body.error, /already in progress/);

    const cancelled = await call(server, 'DELETE', path('many'), { key: world.alice });
    t.same(cancelled.body, { action: 'cancelled', jobId: started.body.jobId });
    const { lastRun } = await finished('many');
    t.match(lastRun, { id: started.body.jobId, stopped: true, failed: false, error: 'Cancelled' });
    t.match(lastRun!.results, { processed: 2, total: 5, chargedCents: 2 * CENTS_PER_IMAGE });
    t.equal(await balance(), before - 2 * CENTS_PER_IMAGE, 'two images charged, not the one in hand');
    release();
    const labeled = (await imagesOf(world, world.alice, 'alice', 'many')).filter(
      (image) => image.labelCount > 0,
    ).length;
    t.ok(labeled <= 2, 'nothing was saved after the cancel');
    t.equal(many.length, 5);
    await checkDatasetInvariants(t, server, manyId);
    const settled = await call(server, 'DELETE', path('many'), { key: world.alice });
    t.same(settled.body, { action: 'dismissed', jobId: started.body.jobId });
    t.equal(await balance(), before - 2 * CENTS_PER_IMAGE, 'dismissing does not charge again');
  },
);

t.test('admission errors', async (t) => {
  const blur = await start('shapes', { operation: 'blur', boxScale: 2 });
  t.equal(blur.status, 400, 'boxScale is 0.5-1.5');
  t.match(blur.body.error, /boxScale/);
  const annotateFields = await start('shapes', { operation: 'blur', modelId: detector.uri });
  t.equal(annotateFields.status, 400, 'a blur takes no model');
  const short = await start('shapes', { modelId: detector.uri, classMapping: [0], includeAnnotated: true });
  t.equal(short.status, 400, 'classMapping checked as for one image, before admission');
  t.match(short.body.error, /the model has 3 classes/);

  await createDataset(world, world.alice, { dataset: 'classless', name: 'classless' });
  const classless = await start('classless', { modelId: detector.uri });
  t.equal(classless.status, 422);
  t.match(classless.body.error, /no classes/);

  await picturesDataset(
    t,
    world,
    world.alice,
    'alice',
    'done',
    { task: 'detect', classNames: NAMES },
    pictures.slice(0, 1),
  );
  const [done] = await imagesOf(world, world.alice, 'alice', 'done');
  await call(server, 'PATCH', `/api/images/${done.id}`, { key: world.alice, body: { labels: HAND_LABELS } });
  const nothing = await start('done', { modelId: detector.uri });
  t.equal(nothing.status, 409);
  t.match(nothing.body.error, /No images left/);
  t.equal(
    (await start('done', { modelId: detector.uri, includeAnnotated: true })).status,
    202,
    'includeAnnotated takes labeled images',
  );
  await finished('done');

  const hosted = await start('shapes', { modelId: 'owlv2' });
  t.equal(hosted.status, 422);
  const provider = await start('shapes', { modelId: 'claude-opus-5-5' });
  t.equal(provider.status, 422);
  t.equal(provider.body.code, 'missing_provider_api_key');

  await query(server.services().em, `update datasets set status = 'processing' where slug = 'done'`);
  const busy = await start('done', { modelId: detector.uri, includeAnnotated: true });
  t.equal(busy.status, 409);
  t.match(busy.body.error, /not ready/);

  const viewer = await start('shapes', { modelId: detector.uri }, world.viewer);
  t.equal(viewer.status, 404, "a key of another workspace does not see alice's private dataset");
  const stranger = await call(server, 'GET', path('shapes'), { key: world.bobby });
  t.equal(stranger.status, 404);
});

t.test('face blur is free: it needs no credit and charges nothing, whatever BILLING_ENFORCED says', async (t) => {
  await picturesDataset(
    t,
    world,
    world.bobby,
    'bobby',
    'bob-faces',
    { task: 'detect', classNames: NAMES },
    pictures.slice(0, 2),
  );
  const bobby = await query<{ id: string }>(server.services().em, `select id from workspaces where handle = 'bobby'`);
  t.equal(await server.services().billing.balanceCents(bobby[0].id), 0);
  const started = await start('bob-faces', { operation: 'blur' }, world.bobby, 'bobby');
  t.equal(started.status, 202, JSON.stringify(started.body));
  let answer: Status;
  do answer = (await call<Status>(server, 'GET', path('bob-faces', 'bobby'), { key: world.bobby })).body;
  while (answer.activeJob !== null || answer.lastRun === null);
  t.match(answer.lastRun, {
    id: started.body.jobId,
    failed: false,
    results: { processed: 2, total: 2, chargedCents: null },
  });
  t.equal(await server.services().billing.balanceCents(bobby[0].id), 0, 'nothing charged');
  t.same((await call(server, 'DELETE', path('bob-faces', 'bobby'), { key: world.bobby })).body, {
    action: 'dismissed',
    jobId: started.body.jobId,
  });
  t.equal(await server.services().billing.balanceCents(bobby[0].id), 0, 'dismissing charges nothing either');
});

t.test('402 when the balance cannot cover every image the run may process', async (t) => {
  const bobModel = await uploadFixtureModel(world, predictor, world.bobby, 'bobby', 'bob-vision', 'detector', 'detect');
  await picturesDataset(
    t,
    world,
    world.bobby,
    'bobby',
    'bob-shapes',
    { task: 'detect', classNames: NAMES },
    pictures.slice(0, 3),
  );
  const poor = await start('bob-shapes', { modelId: bobModel.uri }, world.bobby, 'bobby');
  t.equal(poor.status, 402);
  t.match(poor.body.error, /Insufficient credit: the balance is \$0\.00 and the estimated cost is \$0\.30/);
  await server.services().billing.grant('bobby', 30, 'just enough');
  t.equal((await start('bob-shapes', { modelId: bobModel.uri }, world.bobby, 'bobby')).status, 202);
});

t.test('a team editor runs it; a team viewer may read the status but not start or stop', async (t) => {
  const teamModel = await uploadFixtureModel(
    world,
    predictor,
    world.team,
    'acme-team',
    'team-vision',
    'detector',
    'detect',
  );
  await server.services().billing.grant('acme-team', 1000, 'tests');
  await picturesDataset(
    t,
    world,
    world.team,
    'acme-team',
    'team-shapes',
    { task: 'detect', classNames: NAMES },
    pictures.slice(0, 2),
  );
  const viewer = await start('team-shapes', { modelId: teamModel.uri }, world.viewer, 'acme-team');
  t.equal(viewer.status, 403);
  const read = await call(server, 'GET', path('team-shapes', 'acme-team'), { key: world.viewer });
  t.equal(read.status, 200);
  const stop = await call(server, 'DELETE', path('team-shapes', 'acme-team'), { key: world.viewer });
  t.equal(stop.status, 403);
  t.equal((await start('team-shapes', { modelId: teamModel.uri }, world.editor, 'acme-team')).status, 202);
});
