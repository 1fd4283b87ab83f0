// Pose datasets in the image view: a drawn instance gets the person skeleton's 17 keypoints joined by its bones; a
// keypoint is picked and moved by keyboard, hidden (visibility), and dragged with the mouse; saved, the API holds them.
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

const LEFT_SHOULDER = 5;
/** The person skeleton's 19 bones, 4 of them at the left shoulder. */
const BONES = 19;
const SHOULDER_BONES = 4;

t.test('a user draws a person, moves and hides keypoints, and saves them', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  // A pose dataset of 17 keypoints with visibility, one unlabelled image.
  const listed = await retaskedShapesDataset(t, world, world.alice, 'alice', 'people', {
    task: 'pose',
    kptShape: [17, 3],
    images: 1,
  });
  const target = listed[0]!;

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');
  await page.goto(`${origin}/alice/datasets/people/images/${target.id}`);
  await page.getByRole('heading', { name: target.name, level: 1 }).waitFor();
  t.match(await page.locator('dl.figures').innerText(), /Skeleton\s+person \(17\)/, 'the skeleton is named');
  const canvas = page.getByRole('application', { name: `Labels of ${target.name}` });
  const svg = canvas.locator('svg');
  const box = (await svg.boundingBox())!;
  const at = (x: number, y: number) => ({ x: box.x + box.width * x, y: box.y + box.height * y });
  const status = page.getByRole('toolbar', { name: 'Annotation tools' }).getByRole('status');

  // Drag an instance from (0.2, 0.1) to (0.5, 0.9): the skeleton is laid out in it.
  t.equal(await page.getByRole('button', { name: 'Instance (B)' }).getAttribute('aria-pressed'), 'true');
  await page.mouse.move(at(0.2, 0.1).x, at(0.2, 0.1).y);
  await page.mouse.down();
  await page.mouse.move(at(0.35, 0.5).x, at(0.35, 0.5).y, { steps: 3 });
  await page.mouse.move(at(0.5, 0.9).x, at(0.5, 0.9).y, { steps: 3 });
  await page.mouse.up();
  await status.getByText('Added a').waitFor();
  const bones = svg.locator('line');
  t.equal(
    await settled(
      () => bones.count(),
      (count) => count === BONES,
    ),
    BONES,
    'the person skeleton’s bones are drawn',
  );

  // By keyboard: pick the left shoulder (the 6th keypoint), move it right by 1 %, then mark it not labelled.
  await canvas.focus();
  await page.keyboard.press(']');
  for (let step = 0; step <= LEFT_SHOULDER; step += 1) await page.keyboard.press('.');
  await status.getByText('6 of 17: left shoulder').waitFor();
  await page.keyboard.press('ArrowRight');
  await status.getByText('Moved left shoulder').waitFor();
  await page.keyboard.press('h');
  await status.getByText('left shoulder: occluded').waitFor();
  await page.keyboard.press('h');
  await status.getByText('left shoulder: not labelled').waitFor();
  t.equal(
    await settled(
      () => bones.count(),
      (count) => count === BONES - SHOULDER_BONES,
    ),
    BONES - SHOULDER_BONES,
    'a keypoint not labelled loses its bones',
  );

  // With the mouse: drag the nose (at 0.35, 0.164 of the image) up to (0.35, 0.05).
  await page.getByRole('button', { name: 'Select (V)' }).click();
  await page.mouse.move(at(0.35, 0.164).x, at(0.35, 0.164).y);
  await page.mouse.down();
  await page.mouse.move(at(0.35, 0.1).x, at(0.35, 0.1).y, { steps: 3 });
  await page.mouse.move(at(0.35, 0.05).x, at(0.35, 0.05).y, { steps: 3 });
  await page.mouse.up();
  await status.getByText('Moved nose').waitFor();
  await screenshot(page, 'image-editor-pose');
  t.same(await seriousViolations(page), [], 'pose image view: no serious or critical axe violations');
  await canvas.focus();
  await page.keyboard.press('Control+s');
  await status.getByText('Saved 1 label').waitFor();

  const saved = (
    await call<{ labels: { bbox: number[]; keypoints: number[] }[] }>(world.server, 'GET', `/api/images/${target.id}`, {
      key: world.alice,
    })
  ).body.labels;
  t.equal(saved.length, 1);
  const [instance] = saved;
  const near = (a: number | undefined, b: number, tolerance = 0.01) => Math.abs((a ?? NaN) - b) < tolerance;
  t.ok(
    near(instance!.bbox[0], 0.35) && near(instance!.bbox[1], 0.5) && near(instance!.bbox[2], 0.3),
    `the instance's box is where it was drawn: ${JSON.stringify(instance!.bbox)}`,
  );
  t.equal(instance!.keypoints.length, 17 * 3, '17 keypoints of 3 values');
  const keypoint = (index: number) => instance!.keypoints.slice(3 * index, 3 * index + 3);
  const [shoulderX, , shoulderVisibility] = keypoint(LEFT_SHOULDER);
  t.ok(near(shoulderX, 0.2 + 0.68 * 0.3 + 0.01, 0.003), `the left shoulder moved by 1 %: ${shoulderX}`);
  t.equal(shoulderVisibility, 0, 'and is not labelled');
  const [noseX, noseY, noseVisibility] = keypoint(0);
  t.ok(near(noseX, 0.35) && near(noseY, 0.05), `the nose is where it was dropped: ${noseX}, ${noseY}`);
  t.equal(noseVisibility, 2, 'and visible');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
