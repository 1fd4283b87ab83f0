// Roles in the console are the API's: a viewer of a team sees its datasets without any edit control, and the API
// refuses the edits the console would not offer; an editor of the same team is offered them.
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

t.test('a viewer sees no edit controls and the API refuses its edits; an editor is offered them', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  const datasetId = await createShapesDataset(t, world, world.team, 'acme-team', 'parts', { train: 6, val: 2 });
  const { page, requests, errors } = await openConsoleBrowser(t);

  await signInWithKey(page, origin, world.viewer, 'acme-team');
  await page.getByRole('link', { name: 'parts' }).waitFor();
  t.equal(await page.getByText('New dataset', { exact: true }).count(), 0, 'no new-dataset form for a viewer');
  await page.getByRole('link', { name: 'parts' }).click();
  await page.getByRole('heading', { name: 'parts', level: 1 }).waitFor();
  await page.getByRole('region', { name: 'Images' }).getByRole('status').getByText('8 images match').waitFor();
  t.equal(await page.getByRole('tab', { name: 'Add images' }).count(), 0, 'no upload for a viewer');
  t.equal(await page.getByLabel('Choose a file…').count(), 0, 'no file input for a viewer');
  t.same(await seriousViolations(page), [], 'the viewer’s dataset page: no serious or critical axe violations');
  await screenshot(page, 'dataset-viewer');

  // What the console does not offer, the API refuses anyway (the same key, from the page).
  const refused = await page.evaluate(
    async ({ key, datasetId }) => {
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const create = await fetch('/api/datasets', {
        method: 'POST',
        headers,
        body: JSON.stringify({ dataset: 'sneaky', name: 'Sneaky', task: 'detect' }),
      });
      const upload = await fetch('/api/upload/signed-url', {
        method: 'POST',
        headers,
        body: JSON.stringify({
          assetType: 'datasets',
          assetId: datasetId,
          filename: 'more.zip',
          contentType: 'application/zip',
          totalBytes: 10,
        }),
      });
      return [create.status, upload.status];
    },
    { key: world.viewer, datasetId },
  );
  t.same(refused, [403, 403], 'creating a dataset and uploading into one are refused for the viewer');
  const list = await call<{ datasets: { dataset: string }[] }>(world.server, 'GET', '/api/datasets/acme-team', {
    key: world.team,
  });
  t.same(
    list.body.datasets.map((item) => item.dataset),
    ['parts'],
    'nothing was created',
  );

  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(`${origin}/signin`);
  await signInWithKey(page, origin, world.editor, 'acme-team');
  await page.getByText('New dataset', { exact: true }).waitFor();
  await page.getByRole('link', { name: 'parts' }).click();
  await page.getByRole('tab', { name: 'Add images' }).click();
  await page.getByRole('heading', { name: 'Add images' }).waitFor();
  t.equal(await page.getByLabel('Choose a file…').count(), 1, 'the editor is offered the upload');

  t.same(foreignRequests(requests, origin), []);
  t.same(errors, [], 'no console errors');
});
