// Predict and deployments from the console, with a real control plane and a real worker host (process runtime, the
// real inference server): a user drops an image on a trained model and sees as many boxes drawn as the API finds, moves
// the confidence slider and the drawing follows the API again; deploys the model, watches its status move to ready,
// tries it on the image through the deployment, reads its traffic and its log (severity filter, search), replaces its
// model, stops and starts it, and deletes it. Every page: no serious or critical axe violation, nothing fetched
// from elsewhere.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Locator } from 'playwright';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';
import {
  foreignRequests,
  openConsoleBrowser,
  screenshot,
  seriousViolations,
  settled,
  signInWithKey,
} from './helpers/console-browser.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

t.setTimeout(8 * 60_000);

t.test('a user predicts on a model, deploys it and runs the deployment from the console', async (t) => {
  const fixture = await annotatingModel('detect');
  const world = await startWorld(t, {
    WORKER_HEARTBEAT_SECONDS: '1',
    RATE_LIMIT_MUTATION: '1000',
    RATE_LIMIT_PREDICT: '100000',
  });
  const { server, alice } = world;
  const origin = server.url;
  const dir = mkdtempSync(join(tmpdir(), 'vp-console-deploy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pictures = await writeTestPictures(dir);
  let imageFile = pictures[0]!.file;

  await createProject(world, alice, { project: 'vision', name: 'Vision' });
  for (const [slug, name] of [
    ['detector', 'Detector'],
    ['successor', 'Successor'],
  ]) {
    const created = await createModel(world, alice, {
      project: 'vision',
      model: slug,
      name,
      task: 'detect',
      trainArgs: { imgsz: fixture.imgsz },
    });
    // Weights of their own (exports are shared by the weights' hash).
    await uploadWeights(world, alice, created.id, Buffer.concat([readFileSync(fixture.pt), Buffer.from(slug!)]));
    await seedOnnxExport(server, created.id, fixture.onnx);
  }
  // A pool host that runs inference servers in us-central1.
  const { enrollmentToken } = await server.services().hosts.connect('serving-host', undefined, 'us-central1');
  const config = join(dir, 'serving-host.json');
  await enrollAgent(t, origin, enrollmentToken, config);
  const agent = runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, 'serving-host') });

  /** What the API finds on the image at this confidence (the console's answer must draw as many). */
  const apiCount = async (path: string, conf: string, file = imageFile) => {
    const form = new FormData();
    form.append('conf', conf);
    form.append('file', new Blob([readFileSync(file)]), basename(file));
    const response = await fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}` },
      body: form,
    });
    const body = (await response.json()) as { error?: string; images: Array<{ results: unknown[] }> };
    if (response.status !== 200) throw new Error(`predict at ${path}: ${response.status} ${body.error}`);
    return body.images[0]!.results.length;
  };

  // The picture where the model finds most.
  const counts = await Promise.all(
    pictures.map((picture) => apiCount('/api/models/alice/vision/detector/predict', '0.01', picture.file)),
  );
  imageFile = pictures[counts.indexOf(Math.max(...counts))]!.file;

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, alice, 'alice');

  t.test('predict on the model: the drawing agrees with the API, and follows the confidence slider', async (t) => {
    await page.goto(`${origin}/alice/vision/detector`);
    const panel = page.getByRole('region', { name: 'Predict' });
    await panel.getByLabel('Choose an image…').setInputFiles(imageFile);
    await panel.getByLabel('Confidence').fill('0.01');
    const low = await drawnCount(panel, 0.01);
    t.equal(low, await apiCount('/api/models/alice/vision/detector/predict', '0.01'), 'as many drawn as the API finds');
    t.ok(low > 0, 'the model finds the shapes');
    t.equal(await panel.getByRole('table', { name: 'Predictions' }).getByRole('row').count(), low + 1, 'listed too');
    await panel.getByLabel('Confidence').fill('0.5');
    const high = await drawnCount(panel, 0.5);
    t.equal(high, await apiCount('/api/models/alice/vision/detector/predict', '0.5'), 'the slider runs it again');
    t.ok(high < low, 'fewer at a higher confidence');
    t.same(await seriousViolations(page), [], 'model page with predictions: no serious or critical axe violations');
    await screenshot(page, 'model-predict');
  });

  t.test('deploy, watch it become ready, try it, read its traffic and log', async (t) => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Deployments' }).click();
    await page.waitForURL(`${origin}/alice/deployments`);
    const form = page.getByRole('form', { name: 'Deploy a model' });
    await form.getByLabel('Project').selectOption('vision');
    await form.getByLabel('Model', { exact: true }).selectOption('detector');
    await form.getByLabel('Name').fill('Shape API');
    await form.getByLabel('Region').fill('us-central1');
    t.same(await seriousViolations(page), [], 'deployments page: no serious or critical axe violations');
    // The agent reports what it runs (inference servers) a moment after it connects.
    const services = await settled(
      async () =>
        (
          await call<{ hosts: Array<{ name: string; services: string[] }> }>(server, 'GET', '/api/hosts', {
            key: alice,
          })
        ).body.hosts.find((host) => host.name === 'serving-host')?.services ?? [],
      (names) => names.includes('inference'),
      30_000,
    );
    t.ok(services.includes('inference'), 'the host runs inference servers');
    await form.getByRole('button', { name: 'Deploy' }).click();
    const key = await page.getByLabel("The deployment's API key").textContent();
    t.match(key, /^ul_[0-9a-f]+/, "the deployment's own key, shown once");
    await page
      .getByRole('region', { name: /is being created/ })
      .getByRole('link', { name: 'shape-api' })
      .click();
    await page.waitForURL(`${origin}/alice/deployments/shape-api`);
    const status = page.locator('[data-status]');
    const seen = new Set<string>();
    const reached = await settled(
      async () => {
        const value = (await status.getAttribute('data-status')) ?? '';
        seen.add(value);
        return value;
      },
      (value) => value === 'ready' || value === 'failed',
      180_000,
    );
    t.equal(reached, 'ready', `the status moved to ready (seen: ${[...seen].join(', ')})`, {
      agent: reached === 'ready' ? undefined : agent.output().slice(-3000),
    });

    const tryIt = page.getByRole('region', { name: 'Try it' });
    await tryIt.getByLabel('Choose an image…').setInputFiles(imageFile);
    await tryIt.getByLabel('Confidence').fill('0.01');
    const drawn = await drawnCount(tryIt, 0.01);
    t.ok(drawn > 0, 'the deployment finds the shapes');
    t.equal(drawn, await apiCount('/api/deployments/alice/shape-api/predict', '0.01'), 'the deployment: as the API');
    t.equal(drawn, await apiCount('/api/models/alice/vision/detector/predict', '0.01'), 'and as the model');

    // Requests show in the traffic figures and the log (about a second after they are answered).
    const log = page.getByRole('region', { name: 'Log' });
    const requestRows = log.getByRole('row').filter({ hasText: 'POST' });
    await settled(
      () => requestRows.count(),
      (count) => count >= 2,
      30_000,
    );
    await log.getByLabel('Search').fill('definitely-not-in-the-log');
    await settled(
      () => log.getByRole('status').textContent(),
      (text) => !!text?.startsWith('0 entries shown matching'),
    );
    await log.getByLabel('Search').fill('predict 200');
    await settled(
      () => log.getByRole('status').textContent(),
      (text) => !!text?.match(/^[1-9]\d* entries shown matching “predict 200”/),
    );
    const shown = await log.getByRole('table', { name: 'Log entries' }).locator('tbody tr').allTextContents();
    t.ok(shown.length >= 2 && shown.every((row) => row.includes('predict 200')), 'the search keeps what matches');
    await log.getByLabel('Search').fill('');
    await log.getByLabel('Severity').selectOption({ label: 'errors only' });
    await settled(
      () => log.getByRole('status').textContent(),
      (text) => !!text?.startsWith('0 entries shown'),
    );
    await page.reload();
    const requestsFigure = page.getByLabel('Traffic figures').locator('dd').first();
    await settled(
      () => requestsFigure.textContent(),
      (text) => Number(text) >= 2,
      30_000,
    );
    t.same(await seriousViolations(page), [], 'deployment page: no serious or critical axe violations');
    await screenshot(page, 'deployment');
  });

  t.test('replace the model, stop, start and delete the deployment', async (t) => {
    const read = async () =>
      (
        await call<{ deployment: { status: string; model: string } }>(
          server,
          'GET',
          '/api/deployments/alice/shape-api',
          {
            key: alice,
          },
        )
      ).body.deployment;
    await page.getByLabel('Replace the model with').selectOption('successor');
    await page.getByRole('button', { name: 'Replace' }).click();
    await settled(
      async () => (await read()).model,
      (model) => model === 'successor',
      180_000,
    );
    t.pass('the successor serves');
    await settled(
      async () => (await read()).status,
      (value) => value === 'ready',
      180_000,
    );
    await page.getByRole('button', { name: 'Stop' }).click();
    await settled(
      async () => (await read()).status,
      (value) => value === 'stopped',
      60_000,
    );
    await page.getByRole('button', { name: 'Start' }).click();
    await settled(
      async () => (await read()).status,
      (value) => value === 'deploying' || value === 'ready',
      60_000,
    );
    t.pass('stopped, then started again');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.waitForURL(`${origin}/alice/deployments`);
    const gone = await call(server, 'GET', '/api/deployments/alice/shape-api', { key: alice });
    t.equal(gone.status, 404, 'deleted');
  });

  t.test("the hosts page shows the real agent's load from its heartbeats", async (t) => {
    const listed = await settled(
      async () =>
        (
          await call<{ hosts: Array<{ name: string; load: { cpuPercent: number; memoryUsedBytes: number } | null }> }>(
            server,
            'GET',
            '/api/hosts',
            { key: alice },
          )
        ).body.hosts.find((host) => host.name === 'serving-host')?.load,
      (load) => !!load,
    );
    t.ok(listed && listed.memoryUsedBytes > 0 && listed.cpuPercent >= 0 && listed.cpuPercent <= 100, 'CPU and memory');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Hosts' }).click();
    const row = page.getByRole('row', { name: /serving-host/ });
    await settled(
      () => row.textContent(),
      (text) => !!text?.match(/CPU \d+ %, memory \d+\.\d GiB of \d+\.\d GiB/),
    );
    t.match(await row.textContent(), /CPU \d+ %, memory \d+\.\d GiB of \d+\.\d GiB.*none/, 'load shown; no GPU here');
    t.same(await seriousViolations(page), [], 'hosts page: no serious or critical axe violations');
    await screenshot(page, 'hosts-load');
  });

  t.test('nothing fetched from elsewhere, no page error', async (t) => {
    t.same(foreignRequests(requests, origin), [], 'only the appliance was asked');
    t.same(errors, [], 'no console error');
  });
});

/** Waits for the panel's answer at this confidence and returns how many results it drew. */
async function drawnCount(panel: Locator, conf: number): Promise<number> {
  const status = await settled(
    () => panel.locator('p[role="status"]').textContent(),
    (text) => !!text?.match(new RegExp(`^\\d+ found in .* at confidence ${conf.toFixed(2)}`)),
    120_000,
  );
  const found = Number(status!.split(' ')[0]);
  const drawn = Number(await panel.locator('svg[data-shapes]').getAttribute('data-shapes'));
  const shapes = await panel.locator('g.prediction').count();
  if (drawn !== found || shapes !== found) throw new Error(`${found} found but ${drawn}/${shapes} drawn`);
  return found;
}
