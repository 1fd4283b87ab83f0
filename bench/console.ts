/**
 * `npm run bench:console`: the console in headless Chromium (Debian's, through Playwright's library) against a real
 * control plane, over a dataset of BENCH_CONSOLE_IMAGES (1,000,000) image rows seeded in SQL, whose files repeat 48
 * real ingested JPEGs (their thumbnails are real). Figures, against issue 36's targets:
 * - first load: a fresh browser tab (empty cache) opening the dataset page, to the first thumbnail painted (< 1 s);
 *   the median of BENCH_SAMPLES (5) loads;
 * - a sort changed, to the first thumbnail of the new order painted (< 1 s): the slowest of six sorts;
 * - the gallery scrolled through 10,000 images at 400 px a frame: the share of frames over 50 ms (< 1%);
 * - one image with 5,000 polygons in the image editor: frame intervals while panning and zooming, p95 (the issue's
 *   "< 16 ms" of work per frame: within one 60 Hz frame, 16.7 ms, i.e. no frame dropped), and one
 *   vertex moved by the keyboard to the frame that shows it (< 50 ms), the slowest of 10;
 * - the JavaScript the first load runs, gzipped (< 300 KB);
 * - the embedding map of every image (a layout seeded in SQL: ten discs on a ring): a fresh tab opening it, to every
 *   point drawn (< 3 s), and a lasso around one disc, a tenth of the points, to the frame showing them picked (< 1 s);
 * - issue 37's (console-ops.ts): a run page of 300 epochs, to its curves drawn (< 500 ms); 50 runs × 30 metrics on one
 *   chart, series toggled from its legend, no frame over 100 ms; the hosts page of 100 hosts (< 1 s); a deployment's
 *   log of 100,000 entries searched (< 500 ms); an epoch's report to its curve on the open run page (< 2 s).
 * Timings are read inside the page (performance.now(), frame to frame by requestAnimationFrame), not across the
 * DevTools protocol.
 *
 * Environment: BENCH_CONSOLE_IMAGES, BENCH_SAMPLES, TEST_PG_URL. Everything is stopped and dropped at the end.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium, type Browser, type Page } from 'playwright';
import { api, buildZip, ingestedDataset } from './generated-dataset.ts';
import { adminQuery, positiveInt, recordResult, runBenchmark, startControlPlane, type Figure } from './lib.ts';
import { measureMap, seedLayout } from './console-map.ts';
import {
  COMPARED_METRICS,
  COMPARED_RUNS,
  compareToggleFrames,
  epochToCurve,
  HOSTS,
  hostsPageShown,
  LOG_ENTRIES,
  logSearched,
  LONG_RUN_EPOCHS,
  runPageDrawn,
  seedOps,
} from './console-ops.ts';
import { SEEDED_CLASSES, seedImagesSql, type SeedFile } from './seeded-images.ts';

const IMAGES = positiveInt('BENCH_CONSOLE_IMAGES', 1_000_000);
const SAMPLES = positiveInt('BENCH_SAMPLES', 5);
const FILES = 48;
const POLYGONS = 5000;
const SCROLLED_IMAGES = Math.min(10_000, IMAGES - 1000);
const CHROMIUM = '/usr/bin/chromium';
/** One frame period at 60 Hz, with 0.3 ms for the timer's jitter: no frame was dropped. */
const FRAME_MS = 1000 / 60 + 0.3;

const database = `vp_bench_console_${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'vp-bench-console-'));

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
};

/** A dataset filled from the generated ZIP through the upload and ingest APIs. */
const ingestZip = (base: string, key: string, owner: string, slug: string, task: string) =>
  ingestedDataset(base, key, owner, join(work, 'files.zip'), {
    dataset: slug,
    name: slug,
    task,
    classNames: SEEDED_CLASSES,
  });

/** Replaces the ingested rows with IMAGES seeded rows that share the ingested files. */
async function seedMillion(datasetId: string): Promise<void> {
  const { rows } = await adminQuery<SeedFile & { workspace_id: string }>(
    `select distinct hash, ext, width, height, workspace_id from images where dataset_id = '${datasetId}' and error is null`,
    database,
  );
  if (rows.length === 0) throw new Error('the ingest stored no image');
  await adminQuery(`delete from annotations where dataset_id = '${datasetId}'`, database);
  await adminQuery(`delete from images where dataset_id = '${datasetId}'`, database);
  process.stderr.write(`seeding ${IMAGES.toLocaleString()} images over ${rows.length} files…\n`);
  const started = performance.now();
  const statements = seedImagesSql({ datasetId, workspaceId: rows[0].workspace_id, count: IMAGES, files: rows });
  for (const statement of statements) await adminQuery(statement, database);
  process.stderr.write(`seeded in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
}

/** One image of the segment dataset given POLYGONS small polygons, through the API. */
async function polygonImage(base: string, key: string, owner: string): Promise<string> {
  const { images } = await api<{ images: Array<{ id: string }> }>(
    base,
    key,
    'GET',
    `/api/datasets/${owner}/polygons/images?limit=${FILES}`,
  );
  // The ingest read the ZIP's box labels as a detect dataset's: unlabelled, it may become a segment dataset.
  for (const { id } of images) await api(base, key, 'PATCH', `/api/images/${id}`, { labels: [] });
  await api(base, key, 'PATCH', `/api/datasets/${owner}/polygons`, { task: 'segment' });
  const imageId = images[0].id;
  const labels = Array.from({ length: POLYGONS }, (_, i) => {
    const [x, y] = [0.02 + ((i % 71) / 71) * 0.94, 0.02 + (Math.floor(i / 71) / 71) * 0.94];
    const r = 0.005;
    const segments = Array.from({ length: 6 }, (_, k) => [
      x + r * Math.cos((k * Math.PI) / 3),
      y + r * Math.sin((k * Math.PI) / 3),
    ]).flat();
    return { classId: i % SEEDED_CLASSES.length, segments };
  });
  await api(base, key, 'PATCH', `/api/images/${imageId}`, { labels });
  return imageId;
}

/** A fresh tab (its own context: empty cache), signed in with the key. */
async function signedInPage(browser: Browser, base: string, key: string, owner: string): Promise<Page> {
  // The measuring code is handed to the page as source text, which the console's CSP (no eval) would refuse.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, bypassCSP: true });
  const page = await context.newPage();
  await page.goto(`${base}/signin`);
  await page.getByLabel('API key (kept in this tab only)').fill(key);
  await page.getByRole('button', { name: 'Sign in with the key' }).click();
  await page.waitForURL(`${base}/${owner}/datasets`);
  return page;
}

// What runs in the page is written as source text: bench/ is compiled without the DOM's types.

/** In the page: the time (performance.now()) of the first frame in which the first grid thumbnail is painted and,
 * if given, is the image `expectedId`. */
async function firstThumbnailPainted(page: Page, expectedId?: string): Promise<{ at: number; id: string }> {
  const handle = await page.waitForFunction(
    `(() => {
      const cell = document.querySelector('.grid-cell');
      const image = cell && cell.querySelector('img');
      if (!image || !image.complete || image.naturalWidth === 0) return false;
      const expected = ${JSON.stringify(expectedId ?? null)};
      if (expected !== null && cell.dataset.imageId !== expected) return false;
      return { at: performance.now(), id: cell.dataset.imageId };
    })()`,
    undefined,
    { polling: 'raf', timeout: 30_000 },
  );
  return (await handle.jsonValue()) as { at: number; id: string };
}

/** In the page: runs `step` (source text of a body that sees `frame` and returns whether to go on) on each animation
 * frame, `limit` frames at most; the frame-to-frame times. */
/**
 * A frame loop that stalls (no animation frame for FRAME_STALL_MS: the page stopped drawing) ends with the frames it
 * had, so the caller's check of what it reached fails the benchmark instead of the run waiting forever.
 */
const FRAME_STALL_MS = 30_000;

function frameTimes(page: Page, step: string, limit: number): Promise<number[]> {
  return page.evaluate<number[]>(`new Promise((resolve) => {
    const advance = (frame) => { ${step} };
    const times = [];
    let last = performance.now();
    let frame = 0;
    let stalled = setTimeout(() => resolve(times.slice(1)), ${FRAME_STALL_MS});
    const tick = (now) => {
      clearTimeout(stalled);
      times.push(now - last);
      last = now;
      if (frame >= ${limit} || !advance(frame++)) return resolve(times.slice(1));
      stalled = setTimeout(() => resolve(times.slice(1)), ${FRAME_STALL_MS});
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  })`);
}

const pageNow = (page: Page) => page.evaluate<number>('performance.now()');

async function main(): Promise<void> {
  process.stderr.write(`generating ${FILES} JPEGs…\n`);
  await buildZip(join(work, 'files.zip'), FILES);
  await adminQuery(`create database ${database}`);
  const dataDir = join(work, 'data');
  const { base } = await startControlPlane('control-plane', { databaseName: database, dataDir });
  const key = readFileSync(join(dataDir, 'initial-api-key'), 'utf8').trim();
  const { username: owner } = await api<{ username: string }>(base, key, 'GET', '/api/account/summary');
  const datasetId = await ingestZip(base, key, owner, 'bench', 'detect');
  await ingestZip(base, key, owner, 'polygons', 'segment');
  const polygonImageId = await polygonImage(base, key, owner);
  await seedMillion(datasetId);
  const layoutPoints = await seedLayout(database, datasetId);
  process.stderr.write('seeding runs, hosts and a deployment log…\n');
  const ops = await seedOps(base, key, owner, database);

  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    const datasetPage = `${base}/${owner}/datasets/bench`;
    // First loads, each in a fresh tab; the first tab's script bytes are the initial JavaScript.
    const loads: number[] = [];
    let scriptBytes = 0;
    let page: Page | undefined;
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      await page?.context().close();
      page = await signedInPage(browser, base, key, owner);
      const scripts: Array<Promise<Buffer>> = [];
      if (sample === 0)
        page.on('response', (response) => {
          if (response.request().resourceType() === 'script') scripts.push(response.body());
        });
      await page.goto(datasetPage, { waitUntil: 'commit' });
      const { at } = await firstThumbnailPainted(page);
      loads.push(at);
      if (sample === 0)
        scriptBytes = (await Promise.all(scripts)).reduce((sum, body) => sum + gzipSync(body, { level: 9 }).length, 0);
      process.stderr.write(`  first load ${sample + 1}: ${at.toFixed(0)} ms\n`);
    }
    page = page!;

    // Sort changes, from the page as loaded: each to its first image (as the API lists it) painted first.
    const sorts: Record<string, number> = {};
    for (const sort of ['oldest', 'name-desc', 'size-desc', 'width-asc', 'labels-asc', 'height-desc']) {
      const { images } = await api<{ images: Array<{ id: string }> }>(
        base,
        key,
        'GET',
        `/api/datasets/${owner}/bench/images?limit=1&sort=${sort}`,
      );
      const before = await pageNow(page);
      await page.selectOption('#images-sort', sort);
      const painted = await firstThumbnailPainted(page, images[0]!.id);
      sorts[sort] = painted.at - before;
      process.stderr.write(`  sort ${sort}: ${sorts[sort].toFixed(0)} ms\n`);
    }

    // Scrolling through SCROLLED_IMAGES images: 400 px a frame, waiting (frames still counted) where pages load.
    const columns = await page.evaluate<number>(
      `getComputedStyle(document.querySelector('.grid-row')).gridTemplateColumns.split(' ').length`,
    );
    const rowHeight = 210;
    const scrollTarget = Math.ceil(SCROLLED_IMAGES / columns) * rowHeight;
    const scrollFrames = await frameTimes(
      page,
      `const scroller = document.querySelector('.scroller');
       scroller.scrollTop = Math.min(scroller.scrollTop + 400, ${scrollTarget});
       return scroller.scrollTop < ${scrollTarget};`,
      20_000,
    );
    const reached = await page.evaluate<number>(`document.querySelector('.scroller').scrollTop`);
    if (reached < scrollTarget) throw new Error(`the gallery scrolled to ${reached} px of ${scrollTarget}`);
    const slowFrames = scrollFrames.filter((ms) => ms > 50).length;
    process.stderr.write(
      `  scrolled ${SCROLLED_IMAGES} images in ${scrollFrames.length} frames, ${slowFrames} over 50 ms\n`,
    );

    // The image editor with POLYGONS polygons: zoom in step by step, pan across, zoom out.
    await page.goto(`${datasetPage.replace('/bench', '/polygons')}/images/${polygonImageId}`);
    await page.waitForFunction(
      `document.querySelectorAll('.editor-canvas svg polygon').length >= ${POLYGONS}`,
      undefined,
      { timeout: 60_000 },
    );
    const editorFrames: number[] = [];
    for (const name of ['Zoom in', 'Zoom in', 'Zoom in', 'Zoom in']) {
      await page.locator('.editor-tools button', { hasText: name }).click();
      editorFrames.push(...(await frameTimes(page, 'return frame < 2;', 3)));
    }
    editorFrames.push(
      ...(await frameTimes(
        page,
        `const view = document.querySelector('.editor-canvas');
         view.scrollLeft += 12; view.scrollTop += 8; return frame < 120;`,
        121,
      )),
    );
    for (const name of ['Zoom out', 'Zoom out', 'Zoom out', 'Zoom out']) {
      await page.locator('.editor-tools button', { hasText: name }).click();
      editorFrames.push(...(await frameTimes(page, 'return frame < 2;', 3)));
    }
    const editorP95 = percentile(editorFrames, 95);

    // One vertex moved by the keyboard (the first polygon picked with ], its first vertex with .), to the frame that
    // shows it.
    const canvas = page.locator('.editor-canvas');
    await canvas.focus();
    await page.keyboard.press(']');
    await page.keyboard.press('.');
    const vertexEdits: number[] = [];
    for (let edit = 0; edit < 10; edit += 1) {
      vertexEdits.push(
        await page.evaluate<number>(`new Promise((resolve) => {
          const shape = document.querySelector('[data-label-index="0"]');
          const before = shape.getAttribute('points');
          const started = performance.now();
          document.querySelector('.editor-canvas').dispatchEvent(
            new KeyboardEvent('keydown', { key: 'ArrowRight', altKey: true, bubbles: true }),
          );
          const check = (now) => {
            const current = document.querySelector('[data-label-index="0"]');
            if (current.getAttribute('points') !== before) resolve(now - started);
            else if (now - started > 5000) resolve(Infinity);
            else requestAnimationFrame(check);
          };
          requestAnimationFrame(check);
        })`),
      );
    }
    const vertexEditMax = Math.max(...vertexEdits);

    await page.context().close();
    const map = await measureMap(await signedInPage(browser, base, key, owner), `${datasetPage}#map`, layoutPoints);
    process.stderr.write(
      `  map drawn in ${map.drawnMs.toFixed(0)} ms, lasso of ${map.picked} in ${map.lassoMs.toFixed(0)} ms\n`,
    );

    // Issue 37's pages, each opened in a fresh tab.
    const fresh = async () => {
      await page?.context().close();
      page = await signedInPage(browser, base, key, owner);
      return page;
    };
    const runPage: number[] = [];
    const hostsPage: number[] = [];
    const logSearch: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      runPage.push(await runPageDrawn(await fresh(), `${base}${ops.longRunPath}`));
      hostsPage.push(await hostsPageShown(await fresh(), `${base}/${owner}/hosts`));
      logSearch.push(await logSearched(await fresh(), `${base}${ops.deploymentPath}`, ops.search));
      process.stderr.write(
        `  run page ${runPage.at(-1)!.toFixed(0)} ms, hosts ${hostsPage.at(-1)!.toFixed(0)} ms, log search ${logSearch.at(-1)!.toFixed(0)} ms\n`,
      );
    }
    const compare = await compareToggleFrames(await fresh(), `${base}${ops.comparePath}`);
    const epochDelays = await epochToCurve(await fresh(), base, key, ops.liveRun);
    process.stderr.write(
      `  ${compare.series} series toggled: slowest frame ${Math.max(...compare.frames).toFixed(0)} ms; epoch to curve ${epochDelays.map((ms) => ms.toFixed(0)).join(', ')} ms\n`,
    );
    await page?.context().close();

    const loadP50 = percentile(loads, 50);
    const slowestSort = Object.entries(sorts).reduce((a, b) => (b[1] > a[1] ? b : a));
    const slowShare = (100 * slowFrames) / scrollFrames.length;
    const figures: Figure[] = [
      {
        figure: `dataset page of ${IMAGES.toLocaleString()} images, first load to first thumbnail, median of ${SAMPLES}`,
        value: loadP50,
        unit: 'ms',
        target: '< 1000 ms',
        pass: loadP50 < 1000,
      },
      {
        figure: `sort changed to first thumbnail, slowest of 6 (${slowestSort[0]})`,
        value: slowestSort[1],
        unit: 'ms',
        target: '< 1000 ms',
        pass: slowestSort[1] < 1000,
      },
      {
        figure: `gallery scrolled through ${SCROLLED_IMAGES.toLocaleString()} images, frames over 50 ms`,
        value: slowShare,
        unit: '%',
        target: '< 1%',
        pass: slowShare < 1,
      },
      {
        // Frames come at the display's 60 Hz: an interval of one period (16.7 ms) means the frame's work fit in it.
        figure: `image editor with ${POLYGONS.toLocaleString()} polygons, pan and zoom frame interval p95`,
        value: editorP95,
        unit: 'ms',
        target: '<= 1 frame at 60 Hz (16.7 ms)',
        pass: editorP95 <= FRAME_MS,
      },
      {
        figure: `one vertex moved among ${POLYGONS.toLocaleString()} polygons, to the frame showing it, slowest of 10`,
        value: vertexEditMax,
        unit: 'ms',
        target: '< 50 ms',
        pass: vertexEditMax < 50,
      },
      {
        figure: `embedding map of ${layoutPoints.toLocaleString()} points, fresh tab to every point drawn`,
        value: map.drawnMs,
        unit: 'ms',
        target: '< 3000 ms',
        pass: map.drawnMs < 3000,
      },
      {
        figure: `lasso of ${map.picked.toLocaleString()} points, release to the frame showing them picked`,
        value: map.lassoMs,
        unit: 'ms',
        target: '< 1000 ms',
        pass: map.lassoMs < 1000,
      },
      ...opsFigures(runPage, compare.frames, hostsPage, logSearch, epochDelays),
      {
        figure: 'initial JavaScript, gzipped',
        value: scriptBytes / 1024,
        unit: 'KB',
        target: '< 300 KB',
        pass: scriptBytes / 1024 < 300,
      },
    ];
    console.log(`\nbench:console — ${IMAGES.toLocaleString()} images, headless Chromium\n`);
    for (const f of figures)
      console.log(`${f.figure}: ${f.value.toFixed(1)} ${f.unit} (${f.target}) ${f.pass ? 'PASS' : 'FAIL'}`);
    recordResult('console', figures, {
      images: IMAGES,
      loadsMs: loads,
      sortsMs: sorts,
      scrollFrames: scrollFrames.length,
      slowScrollFrames: slowFrames,
      editorFramesMs: editorFrames,
      vertexEditsMs: vertexEdits,
      map,
      runPageMs: runPage,
      compareFramesMs: compare.frames,
      hostsPageMs: hostsPage,
      logSearchMs: logSearch,
      epochToCurveMs: epochDelays,
    });
  } finally {
    await browser.close();
  }
}

/** Issue 37's rows: medians of the fresh-tab samples, the slowest frame and the slowest epoch report. */
function opsFigures(
  runPage: number[],
  compareFrames: number[],
  hostsPage: number[],
  logSearch: number[],
  epochDelays: number[],
): Figure[] {
  const slowestFrame = Math.max(...compareFrames);
  const slowestEpoch = Math.max(...epochDelays);
  const row = (figure: string, value: number, unit: string, target: string, pass: boolean): Figure => ({
    figure,
    value,
    unit,
    target,
    pass,
  });
  return [
    row(
      `run page of ${LONG_RUN_EPOCHS} epochs, fresh tab to every curve drawn, median of ${SAMPLES}`,
      percentile(runPage, 50),
      'ms',
      '< 500 ms',
      percentile(runPage, 50) < 500,
    ),
    row(
      `${COMPARED_RUNS} runs × ${COMPARED_METRICS} metrics on one chart, slowest frame while toggling series`,
      slowestFrame,
      'ms',
      '< 100 ms',
      slowestFrame < 100,
    ),
    row(
      `hosts page of ${HOSTS} hosts, fresh tab to every row shown, median of ${SAMPLES}`,
      percentile(hostsPage, 50),
      'ms',
      '< 1000 ms',
      percentile(hostsPage, 50) < 1000,
    ),
    row(
      `deployment log of ${LOG_ENTRIES.toLocaleString()} entries searched, to the matches shown, median of ${SAMPLES}`,
      percentile(logSearch, 50),
      'ms',
      '< 500 ms',
      percentile(logSearch, 50) < 500,
    ),
    row(
      `epoch report to its curve on the open run page, slowest of ${epochDelays.length}`,
      slowestEpoch,
      'ms',
      '< 2000 ms',
      slowestEpoch < 2000,
    ),
  ];
}

await runBenchmark('bench:console', main, async () => {
  await adminQuery(`drop database if exists ${database} with (force)`).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});
