// Multi-select in the gallery: images picked in the grid move to another split, images picked in the table (by
// keyboard) are deleted after an explicit confirmation; the API shows both changes.
import t from 'tap';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
  signInWithKey,
} from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

interface ImageList {
  total: number;
  images: { id: string; name: string; split: string }[];
}

t.test('a user moves picked images to val and deletes others', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'picks', { train: 10, val: 4 });
  const images = async (query = '') =>
    (
      await call<ImageList>(world.server, 'GET', `/api/datasets/alice/picks/images?limit=100${query}`, {
        key: world.alice,
      })
    ).body;
  const before = await images();
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/picks`);
  const status = page.getByRole('region', { name: 'Images' }).getByRole('status').first();
  await status.getByText(`${before.total} images match`).waitFor();

  const toMove = before.images.filter((image) => image.split === 'train').slice(0, 3);
  for (const image of toMove) await page.getByLabel(`Select ${image.name}`).check();
  const bulk = page.getByRole('group', { name: 'Selected images' });
  t.match(await bulk.innerText(), /3 selected/);
  await bulk.getByLabel('Move to').selectOption('val');
  await bulk.getByRole('button', { name: 'Move', exact: true }).click();
  await bulk.getByRole('status').getByText('3 moved to val').waitFor();
  const val = await images('&split=val');
  t.equal(val.total, 4 + 3, 'val holds the 3 moved images too');
  t.ok(
    toMove.every((image) => val.images.some((moved) => moved.id === image.id)),
    'the moved images are the ones picked',
  );
  t.match(
    await settled(
      () => bulk.innerText(),
      (text) => /0 selected/.test(text),
    ),
    /0 selected/,
    'picks cleared',
  );

  // The table, by keyboard: focus a row's checkbox, Space picks it; deleting asks once more.
  await page.getByRole('button', { name: 'Table' }).click();
  const toDelete = before.images.filter((image) => image.split === 'val').slice(0, 2);
  for (const image of toDelete) {
    await page.getByLabel(`Select ${image.name}`).focus();
    await page.keyboard.press('Space');
  }
  await bulk.getByText('2 selected').waitFor();
  await bulk.getByRole('button', { name: 'Delete…' }).click();
  t.same(await seriousViolations(page), [], 'gallery with a selection: no serious or critical axe violations');
  await screenshot(page, 'dataset-bulk-confirm');
  t.equal((await images()).total, before.total, 'nothing is deleted before the confirmation');
  await bulk.getByRole('button', { name: 'Delete 2 permanently' }).click();
  await bulk.getByRole('status').getByText('2 deleted').waitFor();
  const after = await images();
  t.equal(after.total, before.total - 2, 'two images fewer');
  t.notOk(
    after.images.some((image) => toDelete.some((gone) => gone.id === image.id)),
    'the deleted images are the ones picked',
  );
  await status.getByText(`${before.total - 2} images match`).waitFor();

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
