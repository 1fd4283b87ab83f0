// bench:console, the embedding map: a layout of every seeded image written in SQL (ten discs of a tenth of the images
// each, on a ring), then a fresh tab opening the dataset's map (to every point drawn) and a lasso around one disc (to
// its points picked and shown).
import type { Page } from 'playwright';
import { adminQuery } from './lib.ts';

/** The discs: their count, the ring's radius and each disc's, in layout units (a lasso of DISC_RADIUS * 1.2 takes one). */
const DISCS = 10;
const RING = 10;
const DISC_RADIUS = 2.5;
/** The view's padding around the points (console/src/map/projection.ts). */
const PADDING = 0.05;

/** Lays the dataset's images out on the ring of discs (image g of the ID order in disc g mod 10, spread evenly over it). */
export async function seedLayout(database: string, datasetId: string): Promise<number> {
  const { rows } = await adminQuery<{ workspace_id: string; n: string }>(
    `select workspace_id, count(*) as n from images where dataset_id = '${datasetId}' group by workspace_id`,
    database,
  );
  const points = Number(rows[0]!.n);
  await adminQuery(`delete from dataset_layouts where dataset_id = '${datasetId}'`, database);
  await adminQuery(
    `insert into dataset_layouts (dataset_id, workspace_id, model_id, digest, points)
     values ('${datasetId}', '${rows[0]!.workspace_id}', 'bench', 'bench', ${points})`,
    database,
  );
  // Golden-ratio spirals: radius by sqrt of one fraction, angle by another, so each disc is evenly filled.
  await adminQuery(
    `insert into dataset_layout_points (dataset_id, ordinal, image_id, x, y, cluster)
     select '${datasetId}', g - 1, id,
       ${RING} * cos(2 * pi() * (g % ${DISCS}) / ${DISCS}) + r * cos(a), ${RING} * sin(2 * pi() * (g % ${DISCS}) / ${DISCS}) + r * sin(a), g % ${DISCS}
     from (select id, row_number() over (order by id) as g from images where dataset_id = '${datasetId}') i
     cross join lateral (select ${DISC_RADIUS} * sqrt(mod(g * 0.6180339887::numeric, 1))::float8 as r,
       2 * pi() * mod(g * 0.7548776662::numeric, 1)::float8 as a) spiral`,
    database,
  );
  await adminQuery('vacuum analyze dataset_layout_points', database);
  return points;
}

/**
 * In a fresh tab: the dataset page opened on its map, to the frame after every point was drawn (WebGL finished: a
 * pixel read back), in ms from the navigation; then a lasso around disc 0, from the button's release to the frame
 * showing its points picked (exactly a tenth of them, or the run fails).
 */
export async function measureMap(
  page: Page,
  mapUrl: string,
  points: number,
): Promise<{ drawnMs: number; lassoMs: number; picked: number }> {
  await page.goto(mapUrl, { waitUntil: 'commit' });
  const drawn = await page.waitForFunction(
    `(() => {
      const canvas = document.querySelector('.embedding-map canvas');
      if (!canvas || canvas.dataset.drawn !== ${JSON.stringify(String(points))}) return false;
      const gl = canvas.getContext('webgl');
      if (gl) gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));
      return performance.now();
    })()`,
    undefined,
    { polling: 'raf', timeout: 120_000 },
  );
  const drawnMs = (await drawn.jsonValue()) as number;
  const canvas = page.locator('.embedding-map canvas');
  // The mouse reaches only what is on screen.
  await page.evaluate(`document.querySelector('.embedding-map canvas').scrollIntoView({ block: 'center' })`);
  const bounds = JSON.parse((await canvas.getAttribute('data-bounds')) ?? '[]') as number[];
  const box = (await canvas.boundingBox())!;
  const [minX, maxX, minY, maxY] = bounds as [number, number, number, number];
  const span = 1 - 2 * PADDING;
  const onScreen = (x: number, y: number) => [
    box.x + box.width * (PADDING + (span * (x - minX)) / (maxX - minX)),
    box.y + box.height * (PADDING + (span * (maxY - y)) / (maxY - minY)),
  ];
  // Disc 0's centre is (RING, 0); the nearest point of its neighbours is 2 RING sin(pi / DISCS) - DISC_RADIUS away.
  const circle = Array.from({ length: 33 }, (_, k) => {
    const angle = (2 * Math.PI * k) / 32;
    return onScreen(RING + 1.2 * DISC_RADIUS * Math.cos(angle), 1.2 * DISC_RADIUS * Math.sin(angle));
  });
  await page.mouse.move(circle[0]![0]!, circle[0]![1]!);
  await page.mouse.down();
  for (const [x, y] of circle.slice(1)) await page.mouse.move(x!, y!);
  await page.evaluate(
    `addEventListener('pointerup', () => { window.lassoReleasedAt = performance.now(); }, { capture: true, once: true })`,
  );
  await page.mouse.up();
  const shown = await page.waitForFunction(
    `(() => {
      const status = [...document.querySelectorAll('.embedding-map [role=status]')].map((element) => element.textContent).join(' ');
      const match = / ([\\d,. \\u202f\\u00a0]+) picked/.exec(status);
      const picked = match ? Number(match[1].replace(/\\D/g, '')) : 0;
      if (picked === 0) return false;
      return { picked, ms: performance.now() - window.lassoReleasedAt };
    })()`,
    undefined,
    { polling: 'raf', timeout: 60_000 },
  );
  const { picked, ms } = (await shown.jsonValue()) as { picked: number; ms: number };
  // Disc 0 holds the images g = 10, 20, … of 1…points.
  const expected = Math.floor(points / DISCS);
  if (picked !== expected) throw new Error(`the lasso around one disc picked ${picked} points, not ${expected}`);
  return { drawnMs, lassoMs: ms, picked };
}
