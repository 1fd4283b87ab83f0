// Suggestions in the image view: one of the workspace's own models (a real ONNX export run by the appliance) pre-fills
// the labels; asking again adds nothing (duplicates at IoU ≥ 0.7 skipped); undo takes them back; saved, they are the
// predict API's labels.
import t from 'tap';
import { generatorPictures, imagesOf, picturesDataset, uploadFixtureModel } from './helpers/auto-annotate.ts';
import { foreignRequests, openConsoleBrowser, screenshot, settled, signInWithKey } from './helpers/console-browser.ts';
import { FixturePredictor } from './helpers/fixture-predictor.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

interface Predicted {
  predictions: { classId: number; bbox?: number[] }[];
}

t.test('a user pre-fills labels from a model, undoes, asks again and saves', async (t) => {
  const predictor = new FixturePredictor();
  t.teardown(() => predictor.close());
  const world = await startWorld(t, {}, { predictor });
  const origin = world.server.url;
  const detector = await uploadFixtureModel(world, predictor, world.alice, 'alice', 'vision', 'detector', 'detect');
  const pictures = await generatorPictures('detect', 3);
  await picturesDataset(
    t,
    world,
    world.alice,
    'alice',
    'fresh',
    { task: 'detect', classNames: ['square', 'disc', 'triangle'] },
    pictures,
  );
  const images = await imagesOf(world, world.alice, 'alice', 'fresh');
  const answers = await Promise.all(
    images.map(
      async (image) =>
        (
          await call<Predicted>(world.server, 'POST', `/api/images/${image.id}/predict`, {
            key: world.alice,
            body: { modelId: detector.uri },
          })
        ).body.predictions,
    ),
  );
  const busiest = answers.reduce(
    (best, predictions, index) => (predictions.length > answers[best]!.length ? index : best),
    0,
  );
  const target = images[busiest]!;
  const predictions = answers[busiest]!;
  t.ok(predictions.length > 0, `the model finds ${predictions.length} objects in ${target.name}`);
  t.equal(target.labelCount, 0, 'the image has no labels yet');

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/fresh/images/${target.id}`);
  const suggestions = page.getByRole('group', { name: 'Suggestions' });
  await suggestions.getByLabel('Suggest with').waitFor();
  const labelList = page.getByRole('list', { name: 'Labels' }).getByRole('listitem');
  const status = page.getByRole('toolbar', { name: 'Annotation tools' }).getByRole('status');

  await suggestions.getByRole('button', { name: 'Suggest labels' }).click();
  await status.getByText(`Suggested ${predictions.length}`).waitFor();
  t.equal(await labelList.count(), predictions.length, 'every prediction became a label');
  await suggestions.getByRole('button', { name: 'Suggest labels' }).click();
  await status.getByText(`Suggested 0 labels (${predictions.length} already there)`).waitFor();
  t.equal(await labelList.count(), predictions.length, 'asking again duplicates nothing');
  await page.getByRole('application').focus();
  await page.keyboard.press('Control+z');
  await page.keyboard.press('Control+z');
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === 0,
    ),
    0,
    'undo takes the suggestions back',
  );
  await page.keyboard.press('Control+Shift+z');
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === predictions.length,
    ),
    predictions.length,
  );
  await screenshot(page, 'image-suggestions');
  await page.getByRole('button', { name: 'Save labels' }).click();
  await status.getByText(`Saved ${predictions.length}`).waitFor();
  const saved = await call<{ labels: unknown[] }>(world.server, 'GET', `/api/images/${target.id}`, {
    key: world.alice,
  });
  t.same(saved.body.labels, predictions, 'the saved labels are the model’s predictions');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
