// Comparing runs and reading a run's validation in the console. The runs are reported the way a trainer on the
// user's own machine reports them (`yolo train project=… name=…` with the platform callback: training_started,
// epoch_end, training_complete to /api/webhooks/training/metrics), then a user compares them on the project page (the
// curves of every run on one chart, the settings and metrics side by side, only what differs) and reads one run's
// confusion matrix and curves on its model page.
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
import { startWorld } from './helpers/world.ts';

const EPOCHS = 6;
const RUNS = [
  { name: 'run-a', lr0: 0.01, best: 0.41 },
  { name: 'run-b', lr0: 0.005, best: 0.47 },
  { name: 'run-c', lr0: 0.01, best: 0.52 },
];
const MATRIX = [
  [12, 1, 3],
  [2, 9, 1],
  [0, 4, 0],
];

t.test('a user compares runs and reads a run’s validation', async (t) => {
  const { server, alice } = await startWorld(t, { RATE_LIMIT_TRAINING: '100000' });
  const origin = server.url;
  const report = async (body: Record<string, unknown>) => {
    const answer = await call<{ modelId: string; runId: number }>(server, 'POST', '/api/webhooks/training/metrics', {
      key: alice,
      body,
    });
    if (answer.status !== 200)
      throw new Error(`${String(body.event)}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  for (const run of RUNS) {
    const started = await report({
      event: 'training_started',
      project: 'alice/Shapes',
      name: run.name,
      data: { epochs: EPOCHS, trainArgs: { epochs: EPOCHS, imgsz: 160, lr0: run.lr0, model: 'yolo11n.yaml' } },
    });
    for (let epoch = 0; epoch < EPOCHS; epoch += 1) {
      const progress = (epoch + 1) / EPOCHS;
      await report({
        event: 'epoch_end',
        modelId: started.modelId,
        data: {
          epoch,
          metrics: {
            'train/box_loss': 2 - progress,
            'metrics/mAP50-95(B)': run.best * progress,
            'metrics/mAP50(B)': Math.min(1, run.best * progress * 1.5),
          },
          fitness: run.best * progress,
          best_fitness: run.best * progress,
        },
      });
    }
    await report({
      event: 'training_complete',
      modelId: started.modelId,
      data: {
        runId: started.runId,
        results: { metrics: { 'metrics/mAP50-95(B)': run.best }, bestEpoch: EPOCHS - 1, bestFitness: run.best },
        classNames: ['circle', 'square'],
        plots: [
          { type: 'confusion_matrix', matrix: MATRIX },
          {
            type: 'pr_curve',
            x: [0, 0.5, 1],
            y: [
              [1, 0.8, 0.2],
              [1, 0.6, 0.1],
            ],
            ap: [0.6, 0.5],
            classes: ['circle', 'square'],
          },
          {
            type: 'f1_curve',
            x: [0, 0.5, 1],
            y: [
              [0.2, 0.7, 0.1],
              [0.3, 0.6, 0.05],
            ],
          },
        ],
      },
    });
  }

  const { page, requests, errors } = await openConsoleBrowser(t);
  await signInWithKey(page, origin, alice, 'alice');
  await page.goto(`${origin}/alice/shapes`);
  const compare = page.getByRole('region', { name: 'Compare runs' });
  // The two newest runs are compared first; a third is ticked in.
  const table = compare.getByRole('table', { name: 'Runs side by side' });
  await settled(
    () => table.locator('thead th').count(),
    (count) => count === 3,
  );
  t.equal(await table.locator('thead th').count(), 3, 'two runs side by side at first');
  await page.getByRole('checkbox', { name: 'Compare run-a' }).check();
  await settled(
    () => table.locator('thead th').count(),
    (count) => count === 4,
  );
  t.same(
    await table.locator('thead th').allTextContents(),
    ['Setting or metric', 'run-c', 'run-b', 'run-a'],
    'the three runs, newest first',
  );
  const chart = compare.getByRole('img', { name: /^Runs compared over/ });
  await settled(
    () => chart.getAttribute('aria-label'),
    (label) => !!label?.includes(`over ${EPOCHS} epochs`) && (label.match(/mAP50-95/g) ?? []).length === 3,
  );
  t.match(
    await chart.getAttribute('aria-label'),
    new RegExp(`over ${EPOCHS} epochs; at the last: run-c · metrics/mAP50-95\\(B\\) 0\\.52`),
    'each run’s mAP50-95 curve on one chart, to its last epoch',
  );
  await compare.getByRole('checkbox', { name: 'train/box_loss' }).check();
  await settled(
    () => chart.getAttribute('aria-label'),
    (label) => (label?.match(/box_loss/g) ?? []).length === 3,
  );
  t.equal(
    ((await chart.getAttribute('aria-label'))?.match(/ · /g) ?? []).length,
    6,
    'two metrics of three runs: six curves',
  );
  const lr0 = table.getByRole('row', { name: /^lr0/ });
  t.same(await lr0.locator('td').allTextContents(), ['0.01', '0.005', '0.01'], 'settings side by side');
  await compare.getByRole('checkbox', { name: 'Only what differs' }).check();
  const rows = await table
    .locator('tbody tr')
    .evaluateAll((found) => found.map((row) => (row as unknown as { dataset: { differs?: string } }).dataset.differs));
  t.ok(rows.length > 0 && rows.every((value) => value === 'true'), 'only the rows that differ are left');
  t.equal(await table.getByRole('row', { name: /^imgsz/ }).count(), 0, 'a setting all runs share is hidden');
  t.equal(await lr0.count(), 1, 'one that differs stays');
  t.same(await seriousViolations(page), [], 'project page comparing runs: no serious or critical axe violations');
  await screenshot(page, 'project-compare-runs');

  await page.getByRole('link', { name: 'run-c' }).click();
  await page.waitForURL(`${origin}/alice/shapes/run-c`);
  const validation = page.getByRole('region', { name: 'Validation' });
  const matrix = validation.getByRole('table', { name: /^Confusion matrix/ });
  await matrix.waitFor();
  t.same(
    await matrix
      .locator('tbody tr')
      .evaluateAll((found) =>
        found.map((row) =>
          [...(row as unknown as { cells: Iterable<{ textContent: string }> }).cells].map((cell) => cell.textContent),
        ),
      ),
    [
      ['circle', '12', '1', '3'],
      ['square', '2', '9', '1'],
      ['background', '0', '4', '0'],
    ],
    'the confusion matrix as reported, rows predicted, with background',
  );
  t.match(
    await validation.getByRole('img', { name: /^Precision against recall/ }).getAttribute('aria-label'),
    /against recall; at the last: all classes 0\.15.*circle 0\.2.*square 0\.1/,
    'the PR curve per class and for all',
  );
  await validation.getByRole('img', { name: /^F1 against confidence/ }).waitFor();
  t.same(await seriousViolations(page), [], 'model page with validation: no serious or critical axe violations');
  await screenshot(page, 'model-validation');
  t.same(foreignRequests(requests, origin), [], 'only the appliance was asked');
  t.same(errors, [], 'no console error');
});
