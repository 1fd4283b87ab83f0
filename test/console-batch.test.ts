// The dataset's batch operations from the console, on a real control plane with the real ONNX model and face
// detector: auto-annotate a dataset's unlabeled images with a trained model (the run's progress, then what it changed,
// which the API agrees with), and blur faces: six-image preview first (nothing changes), then applied (the face's
// image gets new bytes, the others stay).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { generatorPictures, picturesDataset, uploadFixtureModel } from './helpers/auto-annotate.ts';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
  signInWithKey,
} from './helpers/console-browser.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

const NAMES = ['square', 'disc', 'triangle'];

t.test('a user auto-annotates a dataset and blurs its faces from the console', async (t) => {
  const world = await startWorld(t);
  const { server, alice } = world;
  const origin = server.url;
  const model = await uploadFixtureModel(world, null, alice, 'alice', 'vision', 'detector', 'detect');
  await seedOnnxExport(server, model.id, model.onnx);
  await picturesDataset(
    t,
    world,
    alice,
    'alice',
    'shapes',
    { task: 'detect', classNames: NAMES },
    await generatorPictures('detect', 4),
  );
  const astronaut = readFileSync(new URL('./fixtures/astronaut.jpg', import.meta.url));
  const people = await generatorPictures('detect', 2, 47);
  await picturesDataset(t, world, alice, 'alice', 'people', { task: 'detect', classNames: NAMES }, [
    { name: 'astronaut.jpg', bytes: astronaut },
    ...people,
  ]);
  const dataset = async (slug: string) =>
    (await call<{ dataset: { annotationCount: number } }>(server, 'GET', `/api/datasets/alice/${slug}`, { key: alice }))
      .body.dataset;
  /** Each image's content hash by name: a blurred image gets new bytes. */
  const hashes = async (slug: string) => {
    const listed = await call<{ images: Array<{ name: string; hash: string }> }>(
      server,
      'GET',
      `/api/datasets/alice/${slug}/images?limit=100`,
      { key: alice },
    );
    return Object.fromEntries(listed.body.images.map((image) => [image.name, image.hash]));
  };

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, alice, 'alice');

  t.test('auto-annotate: the run, then what it added, as the API has it', async (t) => {
    await page.goto(`${origin}/alice/datasets/shapes#auto`);
    const form = page.getByRole('form', { name: 'Auto-annotate' });
    await form.getByLabel('Project').selectOption('vision');
    await form.getByLabel('Model', { exact: true }).selectOption('detector');
    await form.getByLabel('Minimum confidence').fill('0.2');
    t.same(await seriousViolations(page), [], 'the auto-label tab: no serious or critical axe violations');
    await form.getByRole('button', { name: 'Auto-annotate' }).click();
    const heading = page.getByRole('heading', { name: /^Auto-annotation (finished|failed|cancelled)/ });
    await heading.waitFor({ timeout: 120_000 });
    t.equal(await heading.textContent(), 'Auto-annotation finished');
    const figures = page.getByLabel('What it did');
    const added = Number((await figures.locator('dd').nth(1).textContent())!.replace(/,/g, ''));
    t.equal(await figures.locator('dd').first().textContent(), '4 of 4', 'every unlabeled image processed');
    t.ok(added > 0, 'labels were added');
    t.equal((await dataset('shapes')).annotationCount, added, 'the dataset has the labels the page says were added');
    const status = await call<{ lastRun: { results: { annotations: number }; datasetVersion: number } }>(
      server,
      'GET',
      '/api/datasets/alice/shapes/predict/batch',
      { key: alice },
    );
    t.equal(status.body.lastRun.results.annotations, added, 'and the run says so too');
    t.match(await figures.textContent(), new RegExp(`Version saved firstv${status.body.lastRun.datasetVersion}`));
    await screenshot(page, 'dataset-auto-annotate');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await settled(
      () => heading.count(),
      (count) => count === 0,
    );
    t.equal(
      (await call<{ lastRun: unknown }>(server, 'GET', '/api/datasets/alice/shapes/predict/batch', { key: alice })).body
        .lastRun,
      null,
      'dismissed',
    );
  });

  t.test('face blur: a preview changes nothing; applied, only the image with a face changes', async (t) => {
    const before = await hashes('people');
    t.equal(Object.keys(before).length, 3);
    t.ok(
      Object.values(before).every((hash) => /^[0-9a-f]{64}$/.test(hash)),
      'hashes read',
    );
    await page.goto(`${origin}/alice/datasets/people#auto`);
    await page.getByRole('form', { name: 'Blur faces' }).getByRole('button', { name: 'Preview the blur' }).click();
    const previewDone = page.getByRole('heading', { name: /^Face blur preview (finished|failed|cancelled)/ });
    await previewDone.waitFor({ timeout: 60_000 });
    t.equal(await previewDone.textContent(), 'Face blur preview finished');
    const previews = page.getByRole('list', { name: 'Preview' }).getByRole('listitem');
    t.equal(await previews.count(), 3, 'every image (up to six) previewed');
    t.same(
      (await previews.allTextContents()).map((text) => Number(text.split(' ')[0])).sort((a, b) => a - b),
      [0, 0, 1],
      'one face, in one image',
    );
    t.same(await hashes('people'), before, 'a preview changes no image');
    t.same(await seriousViolations(page), [], 'the preview: no serious or critical axe violations');
    await screenshot(page, 'dataset-face-blur-preview');
    await page.getByRole('button', { name: 'Apply to the dataset' }).click();
    const applied = page.getByRole('heading', { name: /^Face blur (finished|failed|cancelled)/ });
    await applied.waitFor({ timeout: 60_000 });
    t.equal(await applied.textContent(), 'Face blur finished');
    const after = await hashes('people');
    t.not(after['astronaut.jpg'], before['astronaut.jpg'], 'the face’s image was blurred');
    for (const picture of people) t.equal(after[picture.name], before[picture.name], `${picture.name} is as it was`);
  });

  t.test('nothing fetched from elsewhere, no page error', async (t) => {
    t.same(foreignRequests(requests, origin), [], 'only the appliance was asked');
    t.same(errors, [], 'no console error');
  });
});
