// The console in a real browser: sign in with an API key, the datasets list (search, star), a dataset's page (counts,
// split and class shares) and its gallery (class filter, search, boxes drawn, table view), against a control plane
// seeded through the API. axe-core on every page; nothing requested from anywhere but the appliance.
import t from 'tap';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
} from './helpers/console-browser.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

interface ImageList {
  total: number;
  images: { name: string; labelCount: number; classIds: number[] }[];
}

t.test('a user signs in with a key, finds a dataset and an image of a class', async (t) => {
  const world = await startWorld(t);
  await createShapesDataset(t, world, world.alice, 'alice', 'shapes', { train: 24, val: 8 });
  const other = await call(world.server, 'POST', '/api/datasets', {
    key: world.alice,
    body: { dataset: 'street-signs', name: 'Street signs', task: 'detect' },
  });
  t.equal(other.status, 201);
  const { page, requests, errors } = await openConsoleBrowser(t);
  const origin = world.server.url;

  await page.goto(`${origin}/`);
  await page.waitForURL(`${origin}/signin`);
  await page.getByRole('heading', { name: 'Sign in to the Vision Platform' }).waitFor();
  t.same(await seriousViolations(page), [], 'sign-in page: no serious or critical axe violations');
  await screenshot(page, 'signin');

  await page.getByLabel('API key (kept in this tab only)').fill('ul_not-a-key');
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.getByRole('alert').filter({ hasText: /\S/ }).first().waitFor();
  t.equal(new URL(page.url()).pathname, '/signin', 'a wrong key stays on the sign-in page with the reason');

  await page.getByLabel('API key (kept in this tab only)').fill(world.alice);
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.waitForURL(`${origin}/alice/datasets`);
  await page.getByRole('heading', { name: 'Datasets of alice' }).waitFor();
  const cards = page.getByRole('list', { name: 'Datasets' }).getByRole('listitem');
  await cards.nth(1).waitFor();
  t.equal(
    await settled(
      () => cards.count(),
      (count) => count === 2,
    ),
    2,
    'both datasets listed',
  );
  t.same(await seriousViolations(page), [], 'datasets page: no serious or critical axe violations');
  await screenshot(page, 'datasets');

  await page.getByLabel('Search datasets').fill('shap');
  await t.resolves(cards.first().getByRole('link', { name: 'shapes' }).waitFor());
  t.equal(
    await settled(
      () => cards.count(),
      (count) => count === 1,
    ),
    1,
    'the search keeps the matching dataset only',
  );

  const star = page.getByRole('button', { name: /^Star shapes/ });
  t.equal(await star.getAttribute('aria-pressed'), 'false');
  await star.click();
  await page.getByRole('button', { name: 'Star shapes (1 star)' }).waitFor();
  const starred = await call<{ dataset: { isStarred: boolean; starCount: number } }>(
    world.server,
    'GET',
    '/api/datasets/alice/shapes',
    { key: world.alice },
  );
  t.same([starred.body.dataset.isStarred, starred.body.dataset.starCount], [true, 1], 'the star reached the API');

  await page.getByRole('link', { name: 'shapes' }).click();
  await page.waitForURL(`${origin}/alice/datasets/shapes`);
  await page.getByRole('heading', { name: 'shapes', level: 1 }).waitFor();
  const figures = page.locator('dl.figures');
  const imagesShown = /Images\s+32/;
  t.match(
    await settled(
      () => figures.innerText(),
      (text) => imagesShown.test(text),
    ),
    imagesShown,
    'the image count is the API’s',
  );
  t.equal(
    await page.getByRole('tab', { name: 'Images', exact: true }).getAttribute('aria-selected'),
    'true',
    'the dataset page opens on its images',
  );
  await page.getByRole('tab', { name: 'Charts' }).click();
  t.match(page.url(), /#charts$/, 'the open tab is in the address');
  const splits = page.getByRole('region', { name: 'Split shares' });
  const trainShare = /train\s+24 \(75\.0 %\)/;
  t.match(
    await settled(
      () => splits.innerText(),
      (text) => trainShare.test(text),
    ),
    trainShare,
    'split shares: 24 of 32 in train',
  );
  const classes = page.getByRole('region', { name: 'Class shares (annotations)' });
  await classes.getByText('disc').waitFor();
  const stats = await call<{ classes: { classId: number; count: number }[] }>(
    world.server,
    'GET',
    '/api/datasets/alice/shapes/class-stats',
    { key: world.alice },
  );
  const discs = stats.body.classes.find((entry) => entry.classId === 1)?.count ?? 0;
  t.ok(discs > 0, 'the seeded data holds discs');
  const discShare = new RegExp(`disc\\s+${discs} `);
  t.match(
    await settled(
      () => classes.innerText(),
      (text) => discShare.test(text),
    ),
    discShare,
    'class shares show the API’s disc count',
  );
  const perImage = page.getByRole('region', { name: 'Objects per image' });
  const binnedImages = async () =>
    [...(await perImage.innerText()).matchAll(/(\d+) \(\d+\.\d %\)/g)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
  t.equal(await settled(binnedImages, (sum) => sum === 32), 32, 'objects per image: the bins cover every image');

  const annotations = stats.body.classes.reduce((sum, entry) => sum + entry.count, 0);
  const heatmap = page.getByRole('img', { name: /^Where objects are:/ });
  t.match(
    await heatmap.getAttribute('aria-label'),
    new RegExp(`^Where objects are: ${annotations} in all`),
    'the location heat map counts every annotation',
  );
  t.equal(await heatmap.locator('rect').count(), 400, 'on a 20 × 20 grid');

  // Back to the images by the keyboard: Home selects the first tab.
  await page.getByRole('tab', { name: 'Charts' }).press('Home');
  t.equal(
    await page.evaluate(
      () => (globalThis as unknown as { document: { activeElement: { id: string } } }).document.activeElement.id,
    ),
    'tab-images',
    'the images tab has the focus',
  );
  const gallery = page.getByRole('region', { name: 'Image grid' });
  const status = page.getByRole('region', { name: 'Images' }).getByRole('status');
  await status.getByText('32 images match').waitFor();
  await gallery.locator('figure').nth(31).waitFor({ state: 'attached' });
  await page
    .locator('.grid-cell img')
    .first()
    .evaluate((image) => (image as { decode(): Promise<void> }).decode());
  t.same(await seriousViolations(page), [], 'dataset page with its gallery: no serious or critical axe violations');
  await screenshot(page, 'dataset');

  // Find an image by class: the disc filter shows exactly the API's disc images, each described with its classes.
  const withDiscs = await call<ImageList>(
    world.server,
    'GET',
    '/api/datasets/alice/shapes/images?classIds=1&limit=100',
    {
      key: world.alice,
    },
  );
  t.ok(withDiscs.body.total > 0 && withDiscs.body.total < 32, 'some, not all, images hold a disc');
  await page.getByLabel('Class', { exact: true }).selectOption({ label: 'disc' });
  await status.getByText(`${withDiscs.body.total} ${withDiscs.body.total === 1 ? 'image' : 'images'} match`).waitFor();
  const shown = await settled(
    () =>
      gallery
        .locator('figure img')
        .evaluateAll((images) => images.map((image) => (image as unknown as { alt: string }).alt)),
    (alts) => alts.length === withDiscs.body.total,
  );
  t.equal(shown.length, withDiscs.body.total, 'one thumbnail per disc image');
  t.ok(
    shown.every((alt) => /\(.*disc.*\)$/.test(alt)),
    'every thumbnail shown is described as holding a disc',
  );
  const target = withDiscs.body.images[0]!;
  await page.getByLabel('Search images').fill(target.name.replace(/\.jpg$/, ''));
  await status.getByText('1 image matches').waitFor();
  const found = gallery.locator('figure');
  t.equal(
    await settled(
      () => found.count(),
      (count) => count === 1,
    ),
    1,
  );
  t.equal(await found.locator('figcaption').innerText(), target.name, 'the searched image is the one shown');
  t.equal(
    await settled(
      () => found.locator('svg rect').count(),
      (count) => count === target.labelCount,
    ),
    target.labelCount,
    'one box drawn per label',
  );
  await screenshot(page, 'dataset-disc-filter');

  // With the focus still in the search field, a mouse click on the switch (the page must not shift under it).
  await page.getByRole('button', { name: 'Table' }).click();
  const table = page.getByRole('region', { name: 'Image table' });
  await table.getByRole('cell', { name: target.name, exact: true }).waitFor();
  t.equal(
    await settled(
      () => table.locator('tbody tr[data-image-id]').count(),
      (count) => count === 1,
    ),
    1,
    'the table shows the same one image',
  );
  t.same(await seriousViolations(page), [], 'table view: no serious or critical axe violations');
  await screenshot(page, 'dataset-table');

  // A reload keeps the address and the key (this tab's sessionStorage); sign-out forgets it.
  await page.reload();
  await page.getByRole('heading', { name: 'shapes', level: 1 }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  t.equal(await page.evaluate(() => sessionStorage.getItem('vp-key')), null, 'sign-out forgets the key');

  t.same(foreignRequests(requests, origin), [], 'the page requested no address but the appliance’s');
  t.ok(requests.length > 5, 'requests were seen');
  t.same(errors, [], 'no console errors (a CSP refusal would be one)');
});

t.test("the control plane serves the console beside the API, at the trainer's model links too", async (t) => {
  const world = await startWorld(t);
  // The browser test above builds the console; this one may run first.
  await openConsoleBrowser(t);
  const html = { accept: 'text/html,application/xhtml+xml' };
  const page = await fetch(`${world.server.url}/alice/datasets/shapes`, { headers: html });
  t.equal(page.status, 200);
  const csp = page.headers.get('content-security-policy') ?? '';
  t.match(csp, /default-src 'self'/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, 'no inline script or style allowed');
  t.equal(page.headers.get('cache-control'), 'no-cache');
  const body = await page.text();
  t.notMatch(body, /<script>|<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  const script = /src="(\/assets\/[^"]+\.js)"/.exec(body)?.[1];
  t.ok(script, 'index.html loads a hashed script');
  const asset = await fetch(`${world.server.url}${script}`);
  t.equal(asset.status, 200);
  t.match(asset.headers.get('cache-control'), /max-age=31536000, immutable/);
  t.match(asset.headers.get('content-type'), /text\/javascript/);
  t.equal((await fetch(`${world.server.url}/assets/missing-123.js`)).status, 404, 'an unknown asset is a 404');

  // A program asking for JSON still gets the API's answers; the trainer's model page keeps its address.
  const api = await fetch(`${world.server.url}/api/nope`, { headers: html });
  t.match(api.headers.get('content-type'), /application\/json/, '/api is never a page');
  const apiList = await fetch(`${world.server.url}/api/datasets/alice`, {
    headers: { ...html, authorization: `Bearer ${world.alice}` },
  });
  t.match(
    apiList.headers.get('content-type'),
    /application\/json/,
    '/api/datasets/{owner} stays the API, even for a browser',
  );
  t.equal(apiList.status, 200);
  const unknown = await fetch(`${world.server.url}/alice/datasets`, { headers: { accept: 'application/json' } });
  t.equal(unknown.status, 404, 'a JSON client gets no page');
  // The trainer's "View results at …/owner/project/model" link, and a project's address: the console's pages.
  for (const path of ['/alice/project-one/model-one', '/alice/project-one/model-one/', '/alice/project-one']) {
    const opened = await fetch(`${world.server.url}${path}`, { headers: html });
    t.equal(opened.status, 200, path);
    t.match(await opened.text(), /src="\/assets\/[^"]+\.js"/, `${path}: the console`);
  }
  t.equal(
    (await fetch(`${world.server.url}/api/models/alice/project-one`, { headers: html })).headers.get('content-type'),
    'application/json; charset=utf-8',
    'the API keeps its addresses',
  );
  t.equal((await fetch(`${world.server.url}/openapi.json`)).status, 200);
  t.match(await (await fetch(`${world.server.url}/api/docs`, { headers: html })).text(), /swagger/i);
});
