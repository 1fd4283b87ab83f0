// A small, learnable detection dataset drawn with sharp: red squares (class 0) and blue discs (class 1) at
// known places on a plain background, 160 px, with exact YOLO boxes. Seeded, so every run draws the same.
import sharp from 'sharp';
import type { Test } from 'tap';
import { ingestArchive, zipOf, type ApiTarget } from './archives.ts';
import { call } from './server.ts';
import { seededRandom } from './random.ts';

const SIZE = 160;

const random = (seed: number) => seededRandom(seed).next;

/** One picture with one or two shapes that never overlap, and its YOLO label lines. */
async function picture(next: () => number): Promise<{ bytes: Buffer; label: string }> {
  const shapes: string[] = [];
  const lines: string[] = [];
  const count = 1 + Math.floor(next() * 2);
  for (let n = 0; n < count; n++) {
    const cls = Math.floor(next() * 2);
    const side = 36 + Math.floor(next() * 28);
    // Shape n lives in its own half of the picture (left or right), so shapes never touch.
    const left = n * 80 + Math.floor(next() * (80 - side));
    const top = Math.floor(next() * (SIZE - side));
    shapes.push(
      cls === 0
        ? `<rect x="${left}" y="${top}" width="${side}" height="${side}" fill="#e02020"/>`
        : `<circle cx="${left + side / 2}" cy="${top + side / 2}" r="${side / 2}" fill="#2040e0"/>`,
    );
    const f = (value: number) => (value / SIZE).toFixed(6);
    lines.push(`${cls} ${f(left + side / 2)} ${f(top + side / 2)} ${f(side)} ${f(side)}`);
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIZE}" height="${SIZE}"><rect width="100%" height="100%" fill="#d8d8c8"/>${shapes.join('')}</svg>`;
  return { bytes: await sharp(Buffer.from(svg)).jpeg({ quality: 92 }).toBuffer(), label: lines.join('\n') + '\n' };
}

/** The files of a YOLO-layout dataset, by path: data.yaml (class names only), images/ and labels/ per split, of `train` + `val` pictures. */
export async function shapesFiles(train = 64, val = 16, seed = 7): Promise<Record<string, Buffer | string>> {
  const next = random(seed);
  const files: Record<string, Buffer | string> = { 'data.yaml': 'names:\n  0: square\n  1: disc\n' };
  for (const [split, count] of [
    ['train', train],
    ['val', val],
  ] as const) {
    for (let index = 0; index < count; index++) {
      const { bytes, label } = await picture(next);
      files[`images/${split}/${split}-${index}.jpg`] = bytes;
      files[`labels/${split}/${split}-${index}.txt`] = label;
    }
  }
  return files;
}

/** The shapes dataset as a ZIP. */
export async function shapesDataset(train = 64, val = 16, seed = 7): Promise<Buffer> {
  return zipOf(await shapesFiles(train, val, seed));
}

/** Creates a detect dataset in the key's workspace and ingests the shapes into it. */
export async function createShapesDataset(
  t: Test,
  world: ApiTarget,
  key: string,
  owner: string,
  slug: string,
  counts = { train: 64, val: 16 },
): Promise<string> {
  const created = await call<{ id: string }>(world.server, 'POST', '/api/datasets', {
    key,
    body: { dataset: slug, name: slug, task: 'detect' },
  });
  if (created.status !== 201) throw new Error(`create dataset: ${created.status} ${JSON.stringify(created.body)}`);
  const job = await ingestArchive(
    t,
    world,
    key,
    owner,
    slug,
    created.body.id,
    'shapes.zip',
    await shapesDataset(counts.train, counts.val),
  );
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
  return created.body.id;
}

/**
 * A shapes dataset turned into another task's: its images unlabelled, then the task (and `kptShape` for pose) set,
 * as only an unlabelled dataset may change task. Its images, by name.
 */
export async function retaskedShapesDataset(
  t: Test,
  world: ApiTarget,
  key: string,
  owner: string,
  slug: string,
  settings: { task: string; kptShape?: [number, number]; images: number },
): Promise<Array<{ id: string; name: string }>> {
  await createShapesDataset(t, world, key, owner, slug, { train: settings.images, val: 0 });
  const listed = await call<{ images: Array<{ id: string; name: string }> }>(
    world.server,
    'GET',
    `/api/datasets/${owner}/${slug}/images?sort=name-asc`,
    { key },
  );
  for (const image of listed.body.images)
    await call(world.server, 'PATCH', `/api/images/${image.id}`, { key, body: { labels: [] } });
  const { task, kptShape } = settings;
  const retasked = await call(world.server, 'PATCH', `/api/datasets/${owner}/${slug}`, {
    key,
    body: { task, ...(kptShape && { kptShape }) },
  });
  if (retasked.status !== 200) throw new Error(`retask: ${retasked.status} ${JSON.stringify(retasked.body)}`);
  return listed.body.images;
}
