// The gallery over more images than one page: keyset pages fetched as it scrolls, every image reached exactly once,
// and only the rows in view (plus a few) in the page; the labelled/unlabelled filter.
import t from 'tap';
import { foreignRequests, openConsoleBrowser, settled, signInWithKey } from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const COUNT = 450; // more than two pages of 200

t.test('scrolling the gallery pages through every image by keyset', async (t) => {
  const world = await startWorld(t);
  await createShapesDataset(t, world, world.alice, 'alice', 'many', { train: COUNT - 50, val: 50 });
  // Identical pictures are one image: the API says how many there are, and which comes last by name.
  const last = await call<{ total: number; images: { name: string }[] }>(
    world.server,
    'GET',
    '/api/datasets/alice/many/images?sort=name-desc&limit=1',
    { key: world.alice },
  );
  const total = last.body.total;
  const lastName = last.body.images[0]!.name;
  t.ok(total > 400, `${total} images, more than two pages`);
  const { page, requests, errors } = await openConsoleBrowser(t);
  const origin = world.server.url;
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/many`);
  const status = page.getByRole('region', { name: 'Images' }).getByRole('status');
  await status.getByText(`${total} images match`).waitFor();
  await page.getByLabel('Sort by').selectOption('name-asc');

  const grid = page.getByRole('region', { name: 'Image grid' });
  const seen = new Set<string>();
  let most = 0;
  for (let step = 0; step < 200 && !seen.has(lastName); step++) {
    const names = await grid.locator('figcaption').allInnerTexts();
    for (const name of names) seen.add(name);
    most = Math.max(most, names.length);
    await grid.evaluate((element) => {
      (element as unknown as { scrollTop: number }).scrollTop += 400;
    });
    await page.waitForTimeout(30);
  }
  await grid.locator('figcaption', { hasText: lastName }).waitFor();
  for (const name of await grid.locator('figcaption').allInnerTexts()) seen.add(name);
  t.equal(seen.size, total, 'every image appeared while scrolling');
  t.ok(most < 120, `at most ${most} thumbnails were in the page at once, not ${total}`);
  const pages = requests.filter(
    (url) => url.includes('/api/datasets/alice/many/images') && url.includes('sort=name-asc'),
  );
  t.ok(
    pages.filter((url) => url.includes('cursor=')).length >= 2,
    'later pages were asked for by cursor (keyset), not offset',
  );
  t.notOk(
    pages.some((url) => url.includes('offset=')),
    'no offset paging',
  );

  // The labels filter: three images made unlabelled through the API are exactly what "Unlabelled" lists.
  const emptied = (
    await call<{ images: { id: string; name: string }[] }>(
      world.server,
      'GET',
      '/api/datasets/alice/many/images?sort=name-asc&limit=3',
      { key: world.alice },
    )
  ).body.images;
  for (const image of emptied)
    await call(world.server, 'PATCH', `/api/images/${image.id}`, { key: world.alice, body: { labels: [] } });
  await page.getByLabel('Labels', { exact: true }).selectOption({ label: 'Unlabelled' });
  await status.getByText('3 images match').waitFor();
  t.same(
    await settled(
      async () => (await grid.locator('figcaption').allInnerTexts()).sort(),
      (names) => names.length === 3,
    ),
    emptied.map((image) => image.name).sort(),
    'the unlabelled images, and no others',
  );
  await page.getByLabel('Labels', { exact: true }).selectOption({ label: 'Labelled' });
  await status.getByText(`${total - 3} images match`).waitFor();

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, []);
});
