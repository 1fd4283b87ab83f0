// bench:console, part 2 of the console: the pages of training runs, hosts and deployments over data of the size the
// issue names. Runs are reported as a trainer reports them (the platform callback's events to
// /api/webhooks/training/metrics); hosts and their reports are written in SQL (seeded-hosts.ts); a
// deployment's log of 100,000 entries is written in SQL. Timings are read inside the page (performance.now(),
// requestAnimationFrame), except an epoch's report to its curve, which spans this process and the page (Date.now() on
// the same machine).
import type { Page } from 'playwright';
import { api } from './generated-dataset.ts';
import { adminQuery } from './lib.ts';
import { seedConnectedHosts } from './seeded-hosts.ts';

export const LONG_RUN_EPOCHS = 300;
export const COMPARED_RUNS = 50;
export const COMPARED_METRICS = 30;
const COMPARED_EPOCHS = 30;
export const HOSTS = 100;
export const LOG_ENTRIES = 100_000;
const EPOCH_REPORTS = 5;

interface Started {
  modelId: string;
  runId: number;
}

const report = (base: string, key: string, body: Record<string, unknown>) =>
  api<Started>(base, key, 'POST', '/api/webhooks/training/metrics', body);

/** Metric names as ultralytics reports them: losses, accuracy, learning rates, and more of each to reach `count`. */
function metricNames(count: number): string[] {
  const base = [
    'train/box_loss',
    'train/cls_loss',
    'train/dfl_loss',
    'val/box_loss',
    'val/cls_loss',
    'val/dfl_loss',
    'metrics/precision(B)',
    'metrics/recall(B)',
    'metrics/mAP50(B)',
    'metrics/mAP50-95(B)',
    'lr/pg0',
    'lr/pg1',
  ];
  const names = base.slice(0, count);
  for (let extra = 0; names.length < count; extra += 1) names.push(`metrics/extra${extra}(B)`);
  return names;
}

/** A run of `epochs` epochs of `metrics` metrics (a started run left running unless `complete`). */
async function seedRun(
  base: string,
  key: string,
  owner: string,
  project: string,
  name: string,
  epochs: number,
  metrics: string[],
  complete: boolean,
): Promise<Started> {
  const started = await report(base, key, {
    event: 'training_started',
    project: `${owner}/${project}`,
    name,
    data: { epochs: complete ? epochs : epochs + 100, trainArgs: { epochs, imgsz: 640, lr0: 0.01, seed: name.length } },
  });
  for (let epoch = 0; epoch < epochs; epoch += 1) await reportEpoch(base, key, started.modelId, epoch, metrics);
  if (complete)
    await report(base, key, {
      event: 'training_complete',
      modelId: started.modelId,
      data: { runId: started.runId, results: { metrics: { 'metrics/mAP50-95(B)': 0.5 } } },
    });
  return started;
}

function reportEpoch(base: string, key: string, modelId: string, epoch: number, metrics: string[]) {
  const progress = (epoch + 1) / 300;
  return report(base, key, {
    event: 'epoch_end',
    modelId,
    data: {
      epoch,
      metrics: Object.fromEntries(
        metrics.map((name, index) => [name, name.includes('loss') ? 2 - progress : progress * (0.5 + index / 100)]),
      ),
      fitness: progress,
      best_fitness: progress,
    },
  });
}

export interface SeededOps {
  longRunPath: string;
  comparePath: string;
  liveRun: { modelId: string; path: string; epochs: number };
  deploymentPath: string;
  search: string;
  searchMatches: number;
}

/** Every run, host and log entry the rows below read. */
export async function seedOps(base: string, key: string, owner: string, database: string): Promise<SeededOps> {
  // The projects first: runs started at once would race to create theirs.
  for (const project of ['bench-runs', 'bench-compare'])
    await api(base, key, 'POST', '/api/projects', { project, name: project });
  await seedRun(base, key, owner, 'bench-runs', 'long-run', LONG_RUN_EPOCHS, metricNames(12), true);
  const live = await seedRun(base, key, owner, 'bench-runs', 'live-run', 3, metricNames(12), false);
  const metrics = metricNames(COMPARED_METRICS);
  const queue = Array.from({ length: COMPARED_RUNS }, (_, index) => index);
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let run = queue.shift(); run !== undefined; run = queue.shift())
        await seedRun(base, key, owner, 'bench-compare', `run-${run}`, COMPARED_EPOCHS, metrics, true);
    }),
  );

  await seedConnectedHosts(database, HOSTS, 'gpu-');

  // A deployment of the long run's model, stopped (no server is started for it), with its log.
  const { rows } = await adminQuery<{ id: string; workspace_id: string }>(
    `select m.id, m.workspace_id from models m join projects p on p.id = m.project_id where p.slug = 'bench-runs' and m.slug = 'long-run'`,
    database,
  );
  const model = rows[0]!;
  const deploymentId = 'b'.repeat(24);
  await adminQuery(
    `insert into deployments (id, workspace_id, model_id, slug, name, region, status, desired)
     values ('${deploymentId}', '${model.workspace_id}', '${model.id}', 'bench-api', 'Bench API', 'us-central1', 'stopped', 'stopped')`,
    database,
  );
  // Every 97th request failed with a 503: the entries a search for "predict 503" finds, spread over the whole log.
  await adminQuery(
    `insert into deployment_requests (deployment_id, at, method, path, status, latency_ms, via)
     select '${deploymentId}', now() - make_interval(secs => g), 'POST', '/api/deployments/bench/bench-api/predict',
       case when g % 97 = 0 then 503 else 200 end, 20 + g % 50, 'proxy'
     from generate_series(1, ${LOG_ENTRIES - 1000}) g`,
    database,
  );
  await adminQuery(
    `insert into deployment_events (deployment_id, at, severity, message)
     select '${deploymentId}', now() - make_interval(secs => g * 95), 'INFO', 'revision ' || g || ' is live and takes the traffic'
     from generate_series(1, 1000) g`,
    database,
  );
  await adminQuery('vacuum analyze deployment_requests', database);
  return {
    longRunPath: `/${owner}/bench-runs/long-run`,
    comparePath: `/${owner}/bench-compare`,
    liveRun: { modelId: live.modelId, path: `/${owner}/bench-runs/live-run`, epochs: 3 },
    deploymentPath: `/${owner}/deployments/bench-api`,
    search: 'predict 503',
    searchMatches: Math.floor((LOG_ENTRIES - 1000) / 97),
  };
}

/** A fresh tab opening the run page: to every chart holding all its epochs, drawn (a frame after). */
export async function runPageDrawn(page: Page, url: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(
    `[...document.querySelectorAll('[data-epochs]')].length >= 2 &&
     [...document.querySelectorAll('[data-epochs]')].every((chart) => chart.dataset.epochs === '${LONG_RUN_EPOCHS}')`,
    undefined,
    { timeout: 30_000, polling: 'raf' },
  );
  return page.evaluate<number>('new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())))');
}

/**
 * The project page comparing every run on every metric (runs × metrics curves on one chart), then series toggled from
 * the chart's legend one a frame: the frame intervals while toggling (none should pass 100 ms).
 */
export async function compareToggleFrames(page: Page, url: string): Promise<{ series: number; frames: number[] }> {
  await page.goto(url);
  const boxes = page.getByRole('checkbox', { name: /^Compare run-/ });
  await boxes.first().waitFor();
  await page.evaluate(
    `[...document.querySelectorAll('input[aria-label^="Compare run-"]')].filter((box) => !box.checked).forEach((box) => box.click())`,
  );
  await page.waitForFunction(
    `document.querySelectorAll('[aria-label="Runs side by side"] thead th').length === ${COMPARED_RUNS + 1}`,
  );
  const picker = page.locator('.metric-picker input');
  await page.waitForFunction(`document.querySelectorAll('.metric-picker input').length === ${COMPARED_METRICS}`);
  for (let index = 0; index < COMPARED_METRICS; index += 1) {
    const box = picker.nth(index);
    if (!(await box.isChecked())) await box.check();
  }
  const series = COMPARED_RUNS * COMPARED_METRICS;
  await page.waitForFunction(
    `(document.querySelector('[aria-label^="Runs compared"]')?.getAttribute('aria-label').match(/ · /g) ?? []).length === ${series}`,
    undefined,
    { timeout: 120_000 },
  );
  const frames = await page.evaluate<number[]>(`new Promise((resolve) => {
    const entries = [...document.querySelectorAll('.u-legend .u-series')].slice(1);
    const times = [];
    let last = performance.now();
    let step = 0;
    const tick = (now) => {
      times.push(now - last);
      last = now;
      if (step >= 40) return resolve(times.slice(1));
      // Hide 20 series one a frame, then show them again.
      entries[(step % 20) * 37 % entries.length].click();
      step += 1;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  })`);
  return { series, frames };
}

/** A fresh tab opening the hosts page: to every host's row shown. */
export async function hostsPageShown(page: Page, url: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(
    `document.querySelectorAll('[aria-label="Hosts"] tbody tr').length >= ${HOSTS}`,
    undefined,
    { timeout: 30_000, polling: 'raf' },
  );
  return page.evaluate<number>('performance.now()');
}

/** The deployment page's log searched: from the text typed to the matching entries shown. */
export async function logSearched(page: Page, url: string, text: string): Promise<number> {
  await page.goto(url);
  await page.waitForFunction(
    `/^[\\d,]+ entries shown, more below/.test(document.querySelector('[aria-labelledby="logs-heading"] [role="status"]')?.textContent ?? '')`,
  );
  // The live tail is paused: its reads would race the search's.
  await page.getByRole('button', { name: 'Live' }).click();
  return page.evaluate<number>(`new Promise((resolve) => {
    const input = document.querySelector('#logs-search');
    const status = document.querySelector('[aria-labelledby="logs-heading"] [role="status"]');
    const started = performance.now();
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
    setter.call(input, ${JSON.stringify(text)});
    input.dispatchEvent(new Event('input', { bubbles: true }));
    const check = () => {
      const shown = [...document.querySelectorAll('[aria-label="Log entries"] tbody tr')];
      if (status.textContent.includes('matching') && shown.length > 0 && shown.every((row) => row.textContent.includes(${JSON.stringify(text)})))
        resolve(performance.now() - started);
      else if (performance.now() - started > 10000) resolve(Infinity);
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  })`);
}

/** Epochs reported to the running run while its page is open: from each report sent to its curve showing it. */
export async function epochToCurve(
  page: Page,
  base: string,
  key: string,
  live: SeededOps['liveRun'],
): Promise<number[]> {
  await page.goto(`${base}${live.path}`);
  await page.waitForFunction(`document.querySelector('[data-epochs]')?.dataset.epochs === '${live.epochs}'`);
  const delays: number[] = [];
  for (let epoch = live.epochs; epoch < live.epochs + EPOCH_REPORTS; epoch += 1) {
    const shown = page.waitForFunction(
      `document.querySelector('[data-epochs]')?.dataset.epochs === '${epoch + 1}' && Date.now()`,
      undefined,
      { timeout: 30_000, polling: 'raf' },
    );
    const sent = Date.now();
    await reportEpoch(base, key, live.modelId, epoch, metricNames(12));
    delays.push(((await (await shown).jsonValue()) as number) - sent);
    // Reports come a while apart, as epochs end.
    await new Promise((resolve) => setTimeout(resolve, 700));
  }
  return delays;
}
