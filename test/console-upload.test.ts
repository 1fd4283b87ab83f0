// Creating a dataset and adding images in a real browser: the new-dataset form, an archive dropped on the page
// (upload, then the ingest job's progress), the ingest's report with the skipped entry and why, the dataset's figures
// and gallery refreshed; the same archive chosen again through the file input adds nothing and says so.
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
import { zipOf } from './helpers/archives.ts';
import { shapesFiles } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

interface JobAnswer {
  job: {
    status: string;
    result: { imagesAdded: number; imagesSkipped: number; skippedReasons: Record<string, number> };
  };
}

t.test('a user creates a dataset, drops an archive on it and reads what the ingest did', async (t) => {
  const world = await startWorld(t);
  const origin = world.server.url;
  // 12 + 4 pictures, and one entry whose path climbs out of the archive (skipped, with its reason).
  const archive = await zipOf(
    { ...(await shapesFiles(12, 4, 11)), 'xx/escape.jpg': 'not really' },
    {
      'xx/escape.jpg': '../escape.jpg',
    },
  );
  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, world.alice, 'alice');

  await page.getByText('New dataset', { exact: true }).click();
  await page.getByLabel('Name', { exact: true }).fill('Traffic Cones 2');
  t.equal(await page.getByLabel('URL name').inputValue(), 'traffic-cones-2', 'the URL name is suggested from the name');
  await page.getByLabel('Task').selectOption('detect');
  await page.getByRole('button', { name: 'Create dataset' }).click();
  await page.waitForURL(`${origin}/alice/datasets/traffic-cones-2`);
  await page.getByRole('heading', { name: 'Traffic Cones 2', level: 1 }).waitFor();
  const created = await call<{ dataset: { task: string; imageCount: number } }>(
    world.server,
    'GET',
    '/api/datasets/alice/traffic-cones-2',
    { key: world.alice },
  );
  t.same([created.status, created.body.dataset.task, created.body.dataset.imageCount], [200, 'detect', 0]);

  await page.getByRole('tab', { name: 'Add images' }).click();
  // Drop the archive on the drop zone, as a file dragged from the desktop.
  const ingestAnswer = page.waitForResponse((response) => response.url().endsWith('/ingest'));
  const dropped = await page.evaluateHandle(
    ({ base64, name }) => {
      const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
      // The page's DataTransfer (this file is typed without the DOM's types).
      const { DataTransfer } = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: File): void } };
      };
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], name, { type: 'application/zip' }));
      return transfer;
    },
    { base64: archive.toString('base64'), name: 'cones.zip' },
  );
  await page.dispatchEvent('.drop-zone', 'drop', { dataTransfer: dropped });
  const { jobId } = (await (await ingestAnswer).json()) as { jobId: string };
  const ingestStatus = page.getByRole('status').filter({ hasText: /^Ingest:/ });
  await ingestStatus.filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
  const job = await call<JobAnswer>(world.server, 'GET', `/api/jobs/${jobId}`, { key: world.alice });
  t.equal(job.body.job.status, 'completed');
  t.equal(job.body.job.result.imagesAdded, 16, 'the API added every picture');
  const report = page.getByRole('region', { name: 'Ingest result' });
  t.match(await report.innerText(), /Added\s+16/, 'the report shows what was added');
  const reasons = Object.keys(job.body.job.result.skippedReasons);
  t.equal(reasons.length, 1, 'one reason to skip');
  const skipped = page.getByRole('list', { name: 'Skipped entries' });
  t.match(await skipped.innerText(), reasons[0]!, 'the skipped entry’s reason is the API’s');
  t.match(await skipped.innerText(), /\.\.\/escape\.jpg/, 'and the entry is named');

  // The figures and the gallery refresh when the job ends.
  const figures = page.locator('dl.figures').first();
  const sixteen = /Images\s+16/;
  t.match(
    await settled(
      () => figures.innerText(),
      (text) => sixteen.test(text),
    ),
    sixteen,
    'the image count refreshed',
  );
  await screenshot(page, 'dataset-upload');
  await page.getByRole('tab', { name: 'Images', exact: true }).click();
  await page.getByRole('region', { name: 'Images' }).getByRole('status').getByText('16 images match').waitFor();
  t.same(await seriousViolations(page), [], 'dataset page after an upload: no serious or critical axe violations');
  await page.getByRole('tab', { name: 'Add images' }).click();
  t.match(await report.innerText(), /Added\s+16/, 'the upload tab kept its report while the images were shown');

  // The same archive again through the keyboard-reachable file input: nothing new, and the report says so.
  await page
    .getByLabel('Choose a file…')
    .setInputFiles({ name: 'cones.zip', mimeType: 'application/zip', buffer: archive });
  await ingestStatus.filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
  t.match(
    await settled(
      () => report.innerText(),
      (text) => /Already there \(skipped\)\s+16/.test(text),
    ),
    /Added\s+0[\s\S]*Already there \(skipped\)\s+16/,
    'the second ingest added nothing: all 16 were already there',
  );

  t.same(foreignRequests(requests, origin), [], 'the page requested no address but the appliance’s');
  t.same(errors, [], 'no console errors');
});
