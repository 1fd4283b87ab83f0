// The console's other states, each checked and photographed: an empty workspace, a page still loading, an address
// that holds nothing (the API's 404 message), an unknown page, and a phone-sized window (nothing wider than it).
import t from 'tap';
import { openConsoleBrowser, screenshot, seriousViolations, signInWithKey } from './helpers/console-browser.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

t.test('empty, loading, missing, unknown and narrow', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'wide', { train: 6, val: 2 });
  const { page, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.bobby, 'bobby');
  await page.getByText('This workspace has no datasets yet.').waitFor();
  t.same(await seriousViolations(page), [], 'empty workspace: no serious or critical axe violations');
  await screenshot(page, 'datasets-empty');

  // Loading: the list's answer held back until the page has been seen waiting for it.
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route('**/api/datasets/bobby', async (route) => {
    await held;
    await route.continue();
  });
  await page.reload();
  await page.getByText('Loading datasets…').waitFor();
  await screenshot(page, 'datasets-loading');
  release();
  await page.getByText('This workspace has no datasets yet.').waitFor();
  await page.unroute('**/api/datasets/bobby');

  await page.goto(`${origin}/bobby/datasets/nothing-here`);
  const alert = page.getByRole('alert');
  await alert.waitFor();
  t.match(await alert.innerText(), /not found/i, 'a dataset that is not there: the API’s 404 message');
  t.same(await seriousViolations(page), [], 'missing dataset: no serious or critical axe violations');
  await screenshot(page, 'dataset-missing');

  await page.goto(`${origin}/bobby/datasets/a/b/c/d`);
  await page.getByRole('heading', { name: 'Page not found' }).waitFor();
  await screenshot(page, 'page-not-found');

  // A phone-sized window on a full dataset page (alice's): the layout narrows instead of scrolling sideways.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByLabel('API key (kept in this tab only)').fill(world.alice);
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.waitForURL(`${origin}/alice/datasets`);
  await page.goto(`${origin}/alice/datasets/wide`);
  await page.getByRole('region', { name: 'Images' }).getByRole('status').getByText('8 images match').waitFor();
  const widths = await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]');
  const [scrollWidth, innerWidth] = widths as [number, number];
  t.ok(scrollWidth <= innerWidth, `nothing wider than the window (${scrollWidth} ≤ ${innerWidth} px)`);
  t.same(await seriousViolations(page), [], 'narrow window: no serious or critical axe violations');
  await screenshot(page, 'dataset-narrow');

  t.same(
    errors.filter((error) => !/404/.test(error)),
    [],
    'no console errors',
  );
});
