// The image view edits labels: open an image from the gallery, draw a box with the mouse in a chosen class, add and
// delete one by keyboard with undo and redo, be warned before leaving unsaved edits, save, reload and see the box.
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

interface ImageDetail {
  labels: { classId: number; bbox?: number[] }[];
  properties: { filename: string };
}

t.test('a user draws a box, edits by keyboard, saves, reloads and sees it', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  await createShapesDataset(t, world, world.alice, 'alice', 'boxes', { train: 4, val: 1 });
  const list = await call<{ images: { id: string; name: string }[] }>(
    world.server,
    'GET',
    '/api/datasets/alice/boxes/images?limit=1&sort=name-asc',
    { key: world.alice },
  );
  const target = list.body.images[0]!;
  const readLabels = async () =>
    (await call<ImageDetail>(world.server, 'GET', `/api/images/${target.id}`, { key: world.alice })).body.labels;
  const before = await readLabels();
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/boxes`);
  await page.getByRole('region', { name: 'Image grid' }).getByRole('link', { name: target.name }).click();
  await page.waitForURL(`${origin}/alice/datasets/boxes/images/${target.id}`);
  await page.getByRole('heading', { name: target.name, level: 1 }).waitFor();
  const labelList = page.getByRole('list', { name: 'Labels' }).getByRole('listitem');
  await settled(
    () => labelList.count(),
    (count) => count === before.length,
  );
  t.equal(await labelList.count(), before.length, 'the image’s labels are listed');

  // Draw a disc from 20 % × 20 % to 50 % × 60 % of the image.
  await page.getByLabel('Class for new shapes').selectOption({ label: '2: disc' });
  const canvas = page.getByRole('application', { name: `Labels of ${target.name}` });
  const box = (await canvas.locator('svg').boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.2, box.y + box.height * 0.2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.35, box.y + box.height * 0.4, { steps: 4 });
  await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.6, { steps: 4 });
  await page.mouse.up();
  await settled(
    () => labelList.count(),
    (count) => count === before.length + 1,
  );
  t.equal(await labelList.count(), before.length + 1, 'the drawn box is listed');
  const status = page.getByRole('toolbar', { name: 'Annotation tools' }).getByRole('status');
  t.match(await status.innerText(), /Unsaved changes/);

  // Leaving with unsaved edits asks first; declining stays.
  page.once('dialog', (dialog) => void dialog.dismiss());
  await page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link', { name: 'boxes' }).click();
  t.equal(new URL(page.url()).pathname, `/alice/datasets/boxes/images/${target.id}`, 'declining to leave stays');

  // By keyboard: N adds a box, Delete removes it, Ctrl+Z brings it back, Ctrl+Shift+Z removes it again.
  await canvas.focus();
  await page.keyboard.press('n');
  await settled(
    () => labelList.count(),
    (count) => count === before.length + 2,
  );
  t.equal(await labelList.count(), before.length + 2, 'N added a box');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Delete');
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === before.length + 1,
    ),
    before.length + 1,
  );
  await page.keyboard.press('Control+z');
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === before.length + 2,
    ),
    before.length + 2,
    'undo brought it back',
  );
  await page.keyboard.press('Control+Shift+z');
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === before.length + 1,
    ),
    before.length + 1,
    'redo removed it again',
  );
  await page.keyboard.press('Control+s');
  await status.getByText(`Saved ${before.length + 1} labels`).waitFor();

  const after = await readLabels();
  t.equal(after.length, before.length + 1, 'the API holds one more label');
  const drawn = after.at(-1)!;
  t.equal(drawn.classId, 1, 'in the chosen class');
  const [cx = 0, cy = 0, w = 0, h = 0] = drawn.bbox ?? [];
  t.ok(
    Math.abs(cx - 0.35) < 0.02 && Math.abs(cy - 0.4) < 0.02 && Math.abs(w - 0.3) < 0.02 && Math.abs(h - 0.4) < 0.02,
    `where it was drawn: ${JSON.stringify(drawn.bbox)}`,
  );
  t.same(after.slice(0, before.length), before, 'the other labels are as they were');

  await page.reload();
  await page.getByRole('heading', { name: target.name, level: 1 }).waitFor();
  t.equal(
    await settled(
      () => labelList.count(),
      (count) => count === before.length + 1,
    ),
    before.length + 1,
    'after a reload the box is there',
  );
  t.equal(await canvas.locator('[data-label-index]').count(), before.length + 1, 'and drawn');
  t.same(await seriousViolations(page), [], 'image view: no serious or critical axe violations');
  await screenshot(page, 'image-editor');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
