// The embedding map in a real browser: analyze a dataset from the page, the layout drawn (WebGL), a lasso over the
// left half picking exactly the points the API's layout puts there, an island picked by keyboard and moved to test.
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

interface LayoutAnswer {
  total: number;
  images: { id: string; umapX: number; umapY: number; cluster: number | null; missing: boolean }[];
}

/** The console's projection (console/src/map/projection.ts): 5 % padding, x from the left, y from the top. */
function viewX(x: number, [minX, maxX]: number[]): number {
  return 0.05 + (0.9 * (x - minX!)) / (maxX! - minX!);
}
function viewY(y: number, [, , minY, maxY]: number[]): number {
  return 0.05 + (0.9 * (maxY! - y)) / (maxY! - minY!);
}

t.test('a user analyzes a dataset, lassoes points on its map and moves an island', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'spots', { train: 24, val: 8 });
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/spots#map`);
  const map = page.getByRole('region', { name: 'Embedding map' });
  await map.getByRole('button', { name: 'Analyze images' }).click();
  const canvas = map.getByRole('img', { name: /^Embedding map of \d+ images/ });
  await canvas.waitFor({ timeout: 180_000 });

  const layout = (
    await call<LayoutAnswer>(world.server, 'GET', '/api/datasets/alice/spots/images/clustering', { key: world.alice })
  ).body;
  const points = layout.images.filter((image) => !image.missing);
  t.match(await canvas.getAttribute('aria-label'), `Embedding map of ${points.length} images`, 'every point drawn');
  const webgl = await canvas.evaluate((element) => {
    const context = (element as unknown as { getContext(kind: string): unknown }).getContext('webgl');
    return context !== null;
  });
  t.comment(`drawn with ${webgl ? 'WebGL' : 'the 2-D canvas'}`);

  // Lasso the left half of the view: exactly the points the layout puts left of the middle.
  const bounds = JSON.parse((await canvas.getAttribute('data-bounds')) ?? '[]') as number[];
  const expected = points.filter((point) => viewX(point.umapX, bounds) < 0.5).length;
  const box = (await canvas.boundingBox())!;
  await page.mouse.move(box.x + 2, box.y + 2);
  await page.mouse.down();
  for (const [x, y] of [
    [0.5, 0],
    [0.5, 1],
    [0, 1],
  ])
    await page.mouse.move(box.x + 2 + x * (box.width - 4), box.y + 2 + y * (box.height - 4), { steps: 3 });
  await page.mouse.up();

  const status = map.getByRole('status').filter({ hasText: 'picked' });
  const picked = new RegExp(`${points.length} points; ${expected} picked`);
  t.match(
    await settled(
      () => status.innerText(),
      (text) => picked.test(text),
    ),
    picked,
    'the lasso picked every point inside',
  );
  const thumbnails = map.getByRole('region', { name: 'Picked images' }).getByRole('img');
  t.equal(
    await settled(
      () => thumbnails.count(),
      (count) => count === Math.min(expected, 60),
    ),
    Math.min(expected, 60),
    'their images are shown',
  );
  t.same(await seriousViolations(page), [], 'dataset page with its map: no serious or critical axe violations');
  await screenshot(page, 'dataset-map');

  // Zoom by keyboard (+, 0 back to the whole map), then by the wheel over a point, which stays under the pointer; a
  // lasso around the pointer picks exactly the points it encloses as shown.
  await map.getByRole('group', { name: /^Map:/ }).focus();
  await page.keyboard.press('+');
  await map.getByRole('toolbar', { name: 'Map view' }).getByText('Zoom ×1.5').waitFor();
  await page.keyboard.press('0');
  await map.getByRole('toolbar', { name: 'Map view' }).getByText('Zoom ×1.0').waitFor();
  // The whole map in the viewport (the mouse reaches only what is on screen), then where it is.
  await canvas.evaluate((element) =>
    (element as unknown as { scrollIntoView(options: object): void }).scrollIntoView({ block: 'center' }),
  );
  const view = (await canvas.boundingBox())!;
  const zoomOf = async () => JSON.parse((await canvas.getAttribute('data-zoom')) ?? '[]') as number[];
  const onScreen = (point: (typeof points)[number], [scale = 1, cx = 0.5, cy = 0.5]: number[]) =>
    [(viewX(point.umapX, bounds) - cx) * scale + 0.5, (viewY(point.umapY, bounds) - cy) * scale + 0.5] as const;
  // The whole map is on screen: the point nearest its middle.
  const before = await zoomOf();
  const target = points.reduce((best, point) => {
    const distance = (candidate: typeof point) => {
      const [x, y] = onScreen(candidate, before);
      return Math.hypot(x - 0.5, y - 0.5);
    };
    return distance(point) < distance(best) ? point : best;
  });
  const overTarget = (zoom: number[]) => onScreen(target, zoom);
  const [tx, ty] = overTarget(before);
  await page.mouse.move(view.x + tx * view.width, view.y + ty * view.height);
  await page.mouse.wheel(0, -400);
  const zoomed = await settled(zoomOf, (zoom) => (zoom[0] ?? 1) > 2);
  t.ok(zoomed[0]! > 2, `the wheel zoomed in further: ×${zoomed[0]?.toFixed(2)}`);
  const [px, py] = overTarget(zoomed);
  t.ok(Math.abs(px - tx) < 0.02 && Math.abs(py - ty) < 0.02, 'the point under the pointer stayed under it');
  // A square lasso of ±12 % of the canvas around the pointer.
  const corners = [
    [px - 0.12, py - 0.12],
    [px + 0.12, py - 0.12],
    [px + 0.12, py + 0.12],
    [px - 0.12, py + 0.12],
  ].map(([x, y]) => [Math.min(0.99, Math.max(0.01, x!)), Math.min(0.99, Math.max(0.01, y!))] as const);
  const [scale, cx, cy] = zoomed as [number, number, number];
  const [left, top] = [(corners[0]![0] - 0.5) / scale + cx, (corners[0]![1] - 0.5) / scale + cy];
  const [right, bottom] = [(corners[2]![0] - 0.5) / scale + cx, (corners[2]![1] - 0.5) / scale + cy];
  const shown = points.filter((point) => {
    const [x, y] = [viewX(point.umapX, bounds), viewY(point.umapY, bounds)];
    return x > left && x < right && y > top && y < bottom;
  }).length;
  t.ok(shown >= 1, `the lasso encloses ${shown} points, the one under the pointer among them`);
  await page.mouse.move(view.x + corners[0]![0] * view.width, view.y + corners[0]![1] * view.height);
  await page.mouse.down();
  for (const [x, y] of corners.slice(1))
    await page.mouse.move(view.x + x * view.width, view.y + y * view.height, { steps: 3 });
  await page.mouse.up();
  const pickedZoomed = new RegExp(`${points.length} points; ${shown} picked`);
  t.match(
    await settled(
      () => status.innerText(),
      (text) => pickedZoomed.test(text),
    ),
    pickedZoomed,
    'zoomed in, the lasso picked the points inside it as shown',
  );
  await screenshot(page, 'dataset-map-zoomed');
  await map.getByRole('button', { name: 'Whole map (0)' }).click();

  // By keyboard: the largest island from the list, then moved to test with the bulk actions.
  const island = points.filter((point) => point.cluster === 0).length;
  t.ok(island > 0, `the largest island holds ${island} images`);
  await map
    .getByLabel('Pick an island')
    .selectOption({ index: points.some((point) => (point.cluster ?? -1) < 0) ? 2 : 1 });
  t.match(
    await settled(
      () => status.innerText(),
      (text) => text.includes(`${island} picked`),
    ),
    `${island} picked`,
  );
  const bulk = map.getByRole('group', { name: 'Selected images' });
  await bulk.getByLabel('Move to').selectOption('test');
  await bulk.getByRole('button', { name: 'Move', exact: true }).click();
  await bulk
    .getByRole('status')
    .getByText(/moved to test/)
    .waitFor();
  const inTest = await call<{ total: number }>(
    world.server,
    'GET',
    '/api/datasets/alice/spots/images?split=test&limit=1',
    {
      key: world.alice,
    },
  );
  t.ok(
    inTest.body.total > 0 && inTest.body.total <= island,
    `${inTest.body.total} of the island’s images are in test now`,
  );

  // "Similar images" from an image's page: the API's nearest, most similar first.
  const source = points[0]!;
  const nearest = await call<{ images: { id: string; name: string }[] }>(
    world.server,
    'GET',
    `/api/images/${source.id}/similar?includeSourceDataset=true`,
    { key: world.alice },
  );
  t.ok(nearest.body.images.length > 0, 'the API finds similar images');
  await page.goto(`${origin}/alice/datasets/spots/images/${source.id}`);
  const similar = page.getByRole('region', { name: 'Similar images' });
  await similar.getByRole('button', { name: 'Find similar images' }).click();
  const found = similar.getByRole('list', { name: 'Most similar first' }).getByRole('img');
  t.equal(
    await settled(
      () => found.count(),
      (count) => count === nearest.body.images.length,
    ),
    nearest.body.images.length,
    'one thumbnail per similar image',
  );
  t.match(await found.first().getAttribute('alt'), nearest.body.images[0]!.name, 'the most similar first');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
