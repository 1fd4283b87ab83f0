// Training from the console with a real worker host (process runtime, the real ultralytics trainer): a user creates a
// project, starts a 2-epoch training from its page (GPU type from the connected hosts, the estimate and credits shown
// first), watches its run page fill in (progress, loss and accuracy curves per epoch, the console output) and the
// page agrees with the API; exports it to ONNX and downloads the file; a public model's page reads without signing
// in, a private one asks to sign in.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { enqueueJob } from '../control-plane/src/jobs/job-queue.ts';
import { enrollAgent, runAgent, startTrainerHost } from './helpers/agent.ts';
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

const VENV = join(fileURLToPath(new URL('..', import.meta.url)), '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

interface TrainingJob {
  status: string;
  history: Array<{ epoch: number; metrics: Record<string, unknown> }>;
  console: string[];
}

t.test('a user trains a model from the console and watches its curves appear', async (t) => {
  const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1', RATE_LIMIT_TRAINING: '1000' });
  const { server, alice } = world;
  const origin = server.url;
  await server.services().billing.grant('alice', 100_000, 'CI credit');
  await createShapesDataset(t, world, alice, 'alice', 'shapes');
  const dir = mkdtempSync(join(tmpdir(), 'vp-console-train-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const agent = await startTrainerHost(t, server, { name: 'console-host', dir, venv: VENV });

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, alice, 'alice');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Projects' }).click();
  await page.waitForURL(`${origin}/alice/projects`);
  await page.getByText('New project').click();
  await page.getByLabel('Name', { exact: true }).fill('Shape finder');
  await page.getByRole('button', { name: 'Create project' }).click();
  await page.waitForURL(`${origin}/alice/shape-finder`);

  const form = page.getByRole('form', { name: 'Train a model' });
  await form.getByLabel('Model name').fill('First try');
  await form.getByLabel('Dataset').selectOption('shapes');
  await form.getByLabel('Start from').selectOption('yolo11n.yaml');
  await form.getByLabel('Epochs').fill('2');
  await form.getByLabel('Image size (pixels)').fill('160');
  await form.getByLabel('GPU type').selectOption('cpu');
  const estimate = form.getByRole('status');
  await settled(
    () => estimate.textContent(),
    (text) => !!text?.includes('Credits: $1000.00'),
  );
  t.match(await estimate.textContent(), /Estimate: about \$\d+\.\d\d .*Credits: \$1000\.00/, 'estimate and credits');
  t.same(
    await seriousViolations(page),
    [],
    'project page with the training form: no serious or critical axe violations',
  );
  await screenshot(page, 'project-train-form');
  await form.getByRole('button', { name: 'Start training' }).click();
  await page.waitForURL(`${origin}/alice/shape-finder/first-try`);

  // The run page: the curves gain points as epochs are reported, until the training completes.
  const run = page.getByRole('region', { name: 'Training' });
  const progress = run.getByRole('status').first();
  const losses = run.getByRole('img', { name: /^Losses over/ });
  const ended = await settled(
    () => progress.textContent(),
    (text) => /^(completed|failed|cancelled)/.test(text ?? ''),
    240_000,
  );
  const job = (
    await call<{ job: TrainingJob }>(server, 'GET', '/api/models/alice/shape-finder/first-try/training', { key: alice })
  ).body.job;
  t.match(
    ended,
    /^completed: epoch 2 of 2 \(100 %\)/,
    `the run page says it completed\n${agent.output().slice(-3000)}`,
  );
  t.equal(job.status, 'completed');
  t.equal(await losses.getAttribute('data-epochs'), String(job.history.length), 'as many epochs drawn as reported');
  t.equal(job.history.length, 2);
  const lossNames = Object.keys(job.history[0]!.metrics).filter((name) => name.includes('loss'));
  const label = (await losses.getAttribute('aria-label')) ?? '';
  for (const name of lossNames) t.match(label, name, `the losses chart draws ${name}`);
  await run.getByRole('img', { name: /^Accuracy \(mAP, precision, recall\) over 2 epochs/ }).waitFor();
  const output = await run.getByLabel('Console output').textContent();
  t.ok(
    job.console
      .slice(-3)
      .every((line) =>
        output?.includes(line.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '').trim()),
      ),
    'the console output shows the last lines, without their escape codes',
  );
  t.notOk(output?.includes(String.fromCharCode(27)), 'no escape code shown as text');
  t.same(await seriousViolations(page), [], 'run page: no serious or critical axe violations');
  await screenshot(page, 'model-run');

  // Export to ONNX from the model page, watch it finish, download the file.
  const exportsPanel = page.getByRole('region', { name: 'Exports' });
  await exportsPanel.getByLabel('Format', { exact: true }).selectOption('onnx');
  await exportsPanel.getByRole('button', { name: 'Export' }).click();
  // The newest row: a completed training also queues its automatic ONNX export (for predict), listed after it.
  const row = exportsPanel.getByRole('row', { name: /^onnx/ }).first();
  const exported = await settled(
    () => row.textContent(),
    (text) => /completed|failed|cancelled/.test(text ?? ''),
    240_000,
  );
  t.match(exported, /completed/, `the export completed\n${agent.output().slice(-3000)}`);
  const listed = (
    await call<{ exports: Array<{ format: string; file: { size: number } | null }> }>(
      server,
      'GET',
      '/api/models/alice/shape-finder/first-try/exports',
      { key: alice },
    )
  ).body.exports.find((item) => item.format === 'onnx'); // newest first, as the page lists them
  const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('link').click()]);
  const saved = await download.path();
  t.equal(statSync(saved).size, listed?.file?.size, 'the downloaded file is the export, whole');

  // The model page as the trainer's link opens it: a private project's asks a stranger to sign in.
  const stranger = await page.context().browser()!.newContext();
  const anonymous = await stranger.newPage();
  await anonymous.goto(`${origin}/alice/shape-finder/first-try`);
  await anonymous.getByRole('alert').waitFor();
  t.match(await anonymous.getByRole('alert').textContent(), /not found/i, 'a private model is not shown');
  t.ok(await anonymous.getByRole('link', { name: 'Sign in' }).isVisible(), 'the way to sign in is offered');
  t.equal(
    (await call(server, 'PATCH', '/api/projects/alice/shape-finder', { key: alice, body: { visibility: 'public' } }))
      .status,
    200,
  );
  await anonymous.reload();
  await anonymous.getByRole('heading', { name: 'First try', level: 1 }).waitFor();
  await anonymous.getByRole('img', { name: /^Losses over 2 epochs/ }).waitFor();
  t.pass('a public model reads without signing in, its curves too');
  await stranger.close();

  // The hosts page: connect a second host with the command it shows; it comes up connected.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Hosts' }).click();
  await page.waitForURL(`${origin}/alice/hosts`);
  await page.getByLabel("New host's name").fill('second-host');
  await page.getByRole('button', { name: 'Connect a host' }).click();
  const command = (await page.getByLabel('Enrollment command').textContent()) ?? '';
  const [, shownServer, shownToken] =
    /^vp-worker enroll --server (\S+) --token (vpe_[0-9a-f]{32})$/.exec(command.trim()) ?? [];
  t.equal(shownServer, origin, `the command names this appliance: ${command}`);
  const secondConfig = join(dir, 'second.json');
  await enrollAgent(t, shownServer!, shownToken!, secondConfig);
  runAgent(t, secondConfig, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, 'second-work') });
  const hostRow = page.getByRole('row', { name: /^second-host/ });
  t.match(
    await settled(
      () => hostRow.textContent(),
      (text) => !!text?.includes('connected') && !text.includes('disconnected'),
      60_000,
    ),
    /second-host.*connected/,
    'the new host shows as connected',
  );
  t.same(await seriousViolations(page), [], 'hosts page: no serious or critical axe violations');
  await screenshot(page, 'hosts');

  // The job queue: a host job that no connected host can take (it needs a toolchain none reports) waits; cancelled
  // from the jobs page, it is cancelled.
  const em = server.orm.em.fork();
  const [{ id: workspaceId }] = await em
    .getConnection()
    .execute<Array<{ id: string }>>("select id from workspaces where handle = 'alice'");
  const queued = await enqueueJob(em, {
    kind: 'export',
    workspaceId,
    payload: {},
    host: { gpuType: null, gpuCount: 0, toolchain: 'rknn' },
  });
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
  await page.waitForURL(`${origin}/alice/jobs`);
  await page.getByRole('button', { name: `Cancel export job ${queued.id}` }).click();
  const cancelled = await settled(
    async () =>
      (await call<{ job: { status: string } }>(server, 'GET', `/api/jobs/${queued.id}`, { key: alice })).body.job
        .status,
    (status) => status === 'cancelled',
  );
  t.equal(cancelled, 'cancelled', 'the queued job was cancelled from the page');
  t.same(await seriousViolations(page), [], 'jobs page: no serious or critical axe violations');
  await screenshot(page, 'jobs');

  t.same(foreignRequests(requests, origin), [], 'no request to any other address');
  t.same(errors, [], 'no console errors');
});

t.test('a viewer is shown no operator pages, and the API refuses their calls', async (t) => {
  const world = await startWorld(t);
  const { page } = await openConsoleBrowser(t);
  await signInWithKey(page, world.server.url, world.viewer, 'acme-team');
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.getByRole('link', { name: 'Projects' }).waitFor();
  t.equal(await nav.getByRole('link', { name: 'Hosts' }).count(), 0, 'no Hosts link');
  t.equal(await nav.getByRole('link', { name: 'Jobs' }).count(), 0, 'no Jobs link');
  t.equal((await call(world.server, 'GET', '/api/jobs', { key: world.viewer })).status, 403);
  t.equal((await call(world.server, 'GET', '/api/hosts', { key: world.viewer })).status, 403);
  await page.goto(`${world.server.url}/acme-team/hosts`);
  await page.getByRole('alert').waitFor();
  t.pass('the hosts page, opened by its address, shows the refusal');
});
