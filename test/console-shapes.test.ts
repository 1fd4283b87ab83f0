// Polygons in the image view: drag a vertex with the mouse, pick and move one by the keyboard, rotate the shape,
// draw one freehand; saved, the API holds exactly those shapes.
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
import { retaskedShapesDataset } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

interface Polygon {
  classId: number;
  segments: number[];
}

const SQUARE = [0.2, 0.2, 0.4, 0.2, 0.4, 0.4, 0.2, 0.4];

const centroid = (flat: number[]) => {
  const count = flat.length / 2;
  let [x, y] = [0, 0];
  for (let index = 0; index < flat.length; index += 2)
    [x, y] = [x + flat[index]! / count, y + flat[index + 1]! / count];
  return { x, y };
};

t.test('a user edits a polygon vertex by vertex, rotates it and draws another freehand', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  // A segment dataset whose first image holds one square.
  const listed = await retaskedShapesDataset(t, world, world.alice, 'alice', 'outlines', {
    task: 'segment',
    images: 2,
  });
  const target = listed[0]!;
  const patched = await call(world.server, 'PATCH', `/api/images/${target.id}`, {
    key: world.alice,
    body: { labels: [{ classId: 0, segments: SQUARE }] },
  });
  t.equal(patched.status, 200);

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/outlines/images/${target.id}`);
  await page.getByRole('heading', { name: target.name, level: 1 }).waitFor();
  const canvas = page.getByRole('application', { name: `Labels of ${target.name}` });
  const svg = canvas.locator('svg');
  await svg.locator('[data-label-index="0"]').waitFor();
  const box = (await svg.boundingBox())!;
  const at = (x: number, y: number) => ({ x: box.x + box.width * x, y: box.y + box.height * y });
  const status = page.getByRole('toolbar', { name: 'Annotation tools' }).getByRole('status');

  // Select it with the mouse: its four vertices become handles; drag the first from (0.2, 0.2) to (0.1, 0.1).
  await page.getByRole('button', { name: 'Select (V)' }).click();
  await page.mouse.click(at(0.3, 0.3).x, at(0.3, 0.3).y);
  const handles = svg.locator('circle.vertex');
  t.equal(
    await settled(
      () => handles.count(),
      (count) => count === 4,
    ),
    4,
    'a handle per vertex',
  );
  await page.mouse.move(at(0.2, 0.2).x, at(0.2, 0.2).y);
  await page.mouse.down();
  await page.mouse.move(at(0.15, 0.15).x, at(0.15, 0.15).y, { steps: 3 });
  await page.mouse.move(at(0.1, 0.1).x, at(0.1, 0.1).y, { steps: 3 });
  await page.mouse.up();
  await status.getByText('Moved vertex 1').waitFor();

  // By keyboard: . picks the next vertex, an arrow moves it by 1 %; then R turns the whole shape by 5°.
  await canvas.focus();
  await page.keyboard.press('.');
  await status.getByText('2 of 4: vertex 2').waitFor();
  t.equal(await svg.locator('circle.vertex.picked').getAttribute('data-vertex'), '1', 'the second vertex is picked');
  await page.keyboard.press('ArrowRight');
  await status.getByText('Moved vertex 2').waitFor();
  await page.keyboard.press('Escape');
  await page.keyboard.press('r');
  await status.getByText('Rotated 5°').waitFor();

  // Freehand: with the polygon tool, a press dragged round a circle is one polygon along the stroke.
  await page.keyboard.press('p');
  const [cx, cy, radius] = [0.7, 0.6, 0.1];
  await page.mouse.move(at(cx + radius, cy).x, at(cx + radius, cy).y);
  await page.mouse.down();
  for (let step = 1; step <= 36; step += 1) {
    const angle = (step / 36) * 2 * Math.PI;
    const point = at(cx + radius * Math.cos(angle), cy + radius * Math.sin(angle));
    await page.mouse.move(point.x, point.y);
  }
  await page.mouse.up();
  await status.getByText('Added a freehand').waitFor();
  await screenshot(page, 'image-editor-polygons');
  t.same(await seriousViolations(page), [], 'image view with polygons: no serious or critical axe violations');
  await page.keyboard.press('Control+s');
  await status.getByText('Saved 2 labels').waitFor();

  const saved = (
    await call<{ labels: Polygon[] }>(world.server, 'GET', `/api/images/${target.id}`, { key: world.alice })
  ).body.labels;
  t.equal(saved.length, 2, 'the square and the freehand outline');
  // Before the turn the square was (0.1, 0.1) (dragged), (0.41, 0.2) (moved by key), (0.4, 0.4), (0.2, 0.4).
  const beforeTurn = [0.1, 0.1, 0.41, 0.2, 0.4, 0.4, 0.2, 0.4];
  const edited = saved[0]!.segments;
  t.equal(edited.length, 8, 'still four vertices');
  const [was, is] = [centroid(beforeTurn), centroid(edited)];
  t.ok(Math.hypot(was.x - is.x, was.y - is.y) < 0.006, `turned about its centre: ${JSON.stringify(is)}`);
  // The third vertex was never dragged, so its angle about the centre shows the turn exactly.
  const angle = (flat: number[], centre: { x: number; y: number }) =>
    (Math.atan2(flat[5]! - centre.y, flat[4]! - centre.x) * 180) / Math.PI;
  const turned = angle(edited, is) - angle(beforeTurn, was);
  t.ok(Math.abs(turned - 5) < 1, `turned by 5°: ${turned.toFixed(2)}°`);
  const radiusOf = (flat: number[], centre: { x: number; y: number }) =>
    Math.hypot(flat[4]! - centre.x, flat[5]! - centre.y);
  t.ok(Math.abs(radiusOf(edited, is) - radiusOf(beforeTurn, was)) < 0.006, 'the same size');

  const outline = saved[1]!.segments;
  t.ok(outline.length / 2 >= 12, `the outline follows the stroke (${outline.length / 2} vertices)`);
  let far = 0;
  for (let index = 0; index < outline.length; index += 2)
    far = Math.max(far, Math.abs(Math.hypot(outline[index]! - cx, outline[index + 1]! - cy) - radius));
  t.ok(far < 0.02, `every vertex on the drawn circle (off by ${far.toFixed(3)} at most)`);

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
