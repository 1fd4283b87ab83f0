// Classes in the console: rename one, give every class the colour-blind-safe palette, merge one class into another;
// the API holds each change, and the annotations of the merged class now belong to the target.
import t from 'tap';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  signInWithKey,
} from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

interface DatasetAnswer {
  dataset: { classNames: string[]; classColors: Record<string, string>; annotationCount: number };
}
interface ClassStats {
  classes: { classId: number; count: number }[];
}

t.test('a user renames, recolours and merges classes', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'kinds', { train: 8, val: 2 });
  const read = async () =>
    (await call<DatasetAnswer>(world.server, 'GET', '/api/datasets/alice/kinds', { key: world.alice })).body.dataset;
  const before = await read();
  t.same(before.classNames, ['square', 'disc']);
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/kinds#classes`);
  const classes = page.getByRole('region', { name: 'Classes' });
  await classes.getByLabel('Name of class 1').waitFor();

  await classes.getByLabel('Name of class 1').fill('circle');
  await classes.getByRole('button', { name: 'Colour-blind-safe colours' }).click();
  t.equal(await classes.getByLabel('Colour of disc').inputValue(), '#56b4e9', 'the palette’s second colour');
  await classes.getByRole('button', { name: 'Save names and colours' }).click();
  await classes.getByRole('status').getByText('Names and colours saved').waitFor();
  const renamed = await read();
  t.same(renamed.classNames, ['square', 'circle'], 'the rename reached the API');
  t.same(renamed.classColors, { 0: '#e69f00', 1: '#56b4e9' }, 'so did the colours');
  await classes.getByLabel('Colour of circle').waitFor();
  t.same(await seriousViolations(page), [], 'classes panel: no serious or critical axe violations');
  await screenshot(page, 'dataset-classes');

  await classes.getByLabel('Merge circle').check();
  await classes.getByLabel('Merge the ticked classes into').selectOption({ label: 'square' });
  await classes.getByRole('button', { name: 'Merge', exact: true }).click();
  await classes.getByRole('status').getByText('Merged 1 class into square').waitFor();
  const merged = await read();
  t.same(merged.classNames, ['square'], 'one class left');
  const stats = await call<ClassStats>(world.server, 'GET', '/api/datasets/alice/kinds/class-stats', {
    key: world.alice,
  });
  t.same(
    stats.body.classes.map((entry) => [entry.classId, entry.count]),
    [[0, before.annotationCount]],
    'every annotation now belongs to square',
  );
  await classes.getByLabel('Merge circle').waitFor({ state: 'detached' });

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
