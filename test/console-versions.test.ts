// Versions, copies and clones in the console: save a version, change the dataset, save another, compare the two
// (the compare API's counts shown), restore the first; copy picked images into another dataset (adopt) and clone the
// dataset. Each step is checked through the API.
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
import { createDataset, startWorld } from './helpers/world.ts';

interface ImageList {
  total: number;
  images: { id: string; name: string; split: string; labelCount: number }[];
}
interface CompareAnswer {
  summary: { added: number; removed: number; modified: number; moved: number };
}

t.test('a user saves, compares and restores versions, copies images and clones the dataset', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'history', { train: 6, val: 2 });
  await createDataset(world, world.alice, { dataset: 'other', name: 'Other', task: 'detect' });
  const api = <T>(method: string, path: string, body?: unknown) =>
    call<T>(world.server, method, path, { key: world.alice, body });
  const images = async (dataset: string) =>
    (await api<ImageList>('GET', `/api/datasets/alice/${dataset}/images?limit=100`)).body;
  const first = await images('history');
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/history#versions`);
  const versions = page.getByRole('region', { name: 'Versions' });
  await versions.getByText('No version saved yet.').waitFor();

  await versions.getByLabel('Description (optional)').fill('as ingested');
  await versions.getByRole('button', { name: 'Save a version' }).click();
  await versions.getByRole('status').getByText('Saved as version 1').waitFor();

  // Change the dataset through the API (the gallery's own journeys are tested elsewhere): two moved, one deleted.
  const train = first.images.filter((image) => image.split === 'train');
  await api('PATCH', '/api/images/bulk', { imageIds: [train[0]!.id, train[1]!.id], split: 'val' });
  await api('DELETE', '/api/images/bulk', { imageIds: [train[2]!.id] });
  await page.reload();
  await versions.getByLabel('Description (optional)').fill('two moved, one deleted');
  await versions.getByRole('button', { name: 'Save a version' }).click();
  await versions.getByRole('status').getByText('Saved as version 2').waitFor();
  await versions.getByRole('cell', { name: 'two moved, one deleted' }).waitFor();

  await versions.getByRole('button', { name: 'Compare' }).click();
  const comparison = page.getByRole('region', { name: 'Version 1 compared with version 2' });
  await comparison.getByRole('table').waitFor();
  const expected = (await api<CompareAnswer>('GET', '/api/datasets/alice/history/versions/compare?base=1&head=2')).body
    .summary;
  t.same([expected.removed, expected.moved, expected.added], [1, 2, 0], 'the API sees one removed and two moved');
  const shown = await comparison.innerText();
  t.match(shown, new RegExp(`Images removed\\s+${expected.removed}\\b`), 'removed as the API says');
  t.match(shown, new RegExp(`Images moved to another split\\s+${expected.moved}\\b`), 'moved as the API says');
  t.match(shown, new RegExp(`${train[2]!.name}\\s+removed`), 'the deleted image is listed as removed');
  t.same(await seriousViolations(page), [], 'versions and their comparison: no serious or critical axe violations');
  await screenshot(page, 'dataset-versions');

  await versions.getByRole('button', { name: 'Restore v1…' }).click();
  t.equal((await images('history')).total, first.total - 1, 'nothing restored before the confirmation');
  await versions.getByRole('button', { name: 'Replace the images with v1' }).click();
  await versions.getByRole('status').getByText(`Restored version 1: ${first.total} images`).waitFor();
  const restored = await images('history');
  t.equal(restored.total, first.total, 'the deleted image is back');
  t.equal(restored.images.filter((image) => image.split === 'train').length, train.length, 'and the moves undone');
  const figures = page.locator('dl.figures').first();
  const count = new RegExp(`Images\\s+${first.total}\\b`);
  t.match(
    await settled(
      () => figures.innerText(),
      (text) => count.test(text),
    ),
    count,
    'the page shows the restore',
  );

  // Copy two picked images into another dataset of the workspace, with their labels.
  await page.getByRole('tab', { name: 'Images', exact: true }).click();
  const status = page.getByRole('region', { name: 'Images' }).getByRole('status').first();
  await status.getByText(`${first.total} images match`).waitFor();
  const picked = restored.images.slice(0, 2);
  for (const image of picked) await page.getByLabel(`Select ${image.name}`).check();
  const bulk = page.getByRole('group', { name: 'Selected images' });
  await bulk.getByLabel('Copy to').selectOption({ label: 'Other' });
  await bulk.getByRole('button', { name: 'Copy', exact: true }).click();
  await bulk.getByRole('status').getByText('2 copied to other').waitFor();
  const copied = await images('other');
  t.same(
    copied.images.map((image) => image.name).sort(),
    picked.map((image) => image.name).sort(),
    'the other dataset holds the two picked images',
  );
  const labelsOf = (list: ImageList['images']) =>
    Object.fromEntries(list.map((image) => [image.name, [image.split, image.labelCount]]));
  t.same(labelsOf(copied.images), labelsOf(picked), 'with their splits and labels');

  await page.getByRole('button', { name: 'Clone into alice' }).click();
  await page.waitForURL(`${origin}/alice/datasets/history-copy`);
  await page.getByRole('heading', { name: 'history (copy)', level: 1 }).waitFor();
  t.equal((await images('history-copy')).total, first.total, 'the clone holds every image');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
