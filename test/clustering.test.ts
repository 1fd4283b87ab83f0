// Dataset clustering (GET /api/datasets/{owner}/{dataset}/images/clustering) with the real image embedder: an analysis
// of four clearly different families of synthetic pictures ends with a 2-D layout whose islands are the families
// (adjusted Rand index >= 0.8), every image in it although UMAP lays out a sample of 64 of the 80 (16 a family, so
// UMAP's 15 neighbours can be of the image's own family; the others are placed beside their nearest sampled neighbours); the layout pages with offset/limit and carries each image's fields
// as they are now (a deleted image is missing); the binary form (.../clustering/points) holds the same points; the
// same vectors give the same layout; no layout before an analysis and none for another workspace (404).
import t from 'tap';
import sharp from 'sharp';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { expectError } from './helpers/expect.ts';
import { seededRandom, type SeededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Point {
  id: string;
  umapX: number;
  umapY: number;
  cluster: number | null;
  split: string | null;
  classIds: number[];
  width: number;
  height: number;
  bytes: number | null;
  labelCount: number;
  labeled: boolean;
  missing: boolean;
}

interface Page {
  images: Point[];
  total: number;
  offset: number;
  limit: number;
  hasMore: boolean;
  nextOffset: number | null;
  updatedAt: string;
}

const FAMILIES = 4;
const PER_FAMILY = 20;
const IMAGES = FAMILIES * PER_FAMILY;
const SIZE = 160;

const LAYOUT_SAMPLE = 64;
const world = await startWorld(t, {
  RATE_LIMIT_CLUSTERING: '1000000',
  EMBEDDING_LAYOUT_SAMPLE: String(LAYOUT_SAMPLE),
});
const { server } = world;
const clustering = (slug: string, query = '', key = world.alice) =>
  call<Page>(server, 'GET', `/api/datasets/alice/${slug}/images/clustering${query}`, { key });

/** GET .../clustering/points decoded as its OpenAPI description says: 32 bytes a point. */
async function drawingPoints(slug: string, key = world.alice) {
  const response = await fetch(`${server.url}/api/datasets/alice/${slug}/images/clustering/points`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const bytes = Buffer.from(await response.arrayBuffer());
  const points = [];
  for (let at = 0; at + 32 <= bytes.length; at += 32) {
    points.push({
      id: bytes.toString('hex', at, at + 12),
      umapX: bytes.readFloatBE(at + 12),
      umapY: bytes.readFloatBE(at + 16),
      cluster: bytes.readInt32BE(at + 20),
      firstClass: bytes.readInt32BE(at + 24),
      split: ['train', 'val', 'test'][bytes.readInt32BE(at + 28)],
    });
  }
  return { status: response.status, type: response.headers.get('content-type'), length: bytes.length, points };
}

/** A layout page's points as the binary form gives them (images missing since are left out). */
const asDrawn = (images: Point[]) =>
  images
    .filter((point) => !point.missing)
    .map((point) => ({
      id: point.id,
      // float32 in the binary form; the JSON's numbers are the shortest decimals of the same float32 values.
      umapX: Math.fround(point.umapX),
      umapY: Math.fround(point.umapY),
      cluster: point.cluster ?? -1,
      firstClass: point.classIds[0] ?? -1,
      split: point.split,
    }));

const jitter = (random: SeededRandom, value: number, by: number) =>
  Math.max(0, Math.min(255, Math.round(value + (random.next() - 0.5) * 2 * by)));
const rgb = (random: SeededRandom, [r, g, b]: number[], by = 30) =>
  `rgb(${jitter(random, r, by)},${jitter(random, g, by)},${jitter(random, b, by)})`;

/** One picture of a family: discs, stripes, a checkerboard or a noise texture, each varied in place, size and shade. */
async function familyPicture(family: number, random: SeededRandom): Promise<Buffer> {
  if (family === 3) {
    // Coarse coloured noise, scaled up: a texture with no shapes.
    const cells = 8 + random.int(8);
    const noise = Buffer.alloc(cells * cells * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = random.int(256);
    return sharp(noise, { raw: { width: cells, height: cells, channels: 3 } })
      .resize(SIZE, SIZE, { kernel: 'nearest' })
      .png()
      .toBuffer();
  }
  let body = '';
  if (family === 0) {
    body = `<rect width="100%" height="100%" fill="${rgb(random, [245, 245, 235], 10)}"/>`;
    for (let i = 0, n = 1 + random.int(3); i < n; i++) {
      body += `<circle cx="${30 + random.int(100)}" cy="${30 + random.int(100)}" r="${15 + random.int(25)}" fill="${rgb(random, [220, 30, 30])}"/>`;
    }
  } else if (family === 1) {
    const stripe = 8 + random.int(12);
    body = `<rect width="100%" height="100%" fill="${rgb(random, [20, 40, 160])}"/>`;
    for (let y = random.int(stripe); y < SIZE; y += 2 * stripe)
      body += `<rect x="0" y="${y}" width="${SIZE}" height="${stripe}" fill="${rgb(random, [60, 200, 80])}"/>`;
  } else {
    const square = 16 + random.int(16);
    body = `<rect width="100%" height="100%" fill="${rgb(random, [15, 15, 15], 10)}"/>`;
    for (let y = 0; y < SIZE; y += square) {
      for (let x = (y / square) % 2 === 0 ? 0 : square; x < SIZE; x += 2 * square)
        body += `<rect x="${x}" y="${y}" width="${square}" height="${square}" fill="${rgb(random, [240, 210, 30], 15)}"/>`;
    }
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${SIZE}" height="${SIZE}">${body}</svg>`;
  return sharp(Buffer.from(svg))
    .removeAlpha()
    .rotate(random.int(3) * 90)
    .png()
    .toBuffer();
}

/** The dataset's files: family f's pictures are named fam-f-k; the discs are labelled (class 0, one box each). */
async function families(): Promise<Record<string, Buffer | string>> {
  const random = seededRandom(7);
  const files: Record<string, Buffer | string> = { 'data.yaml': 'names:\n  0: disc\n' };
  for (let family = 0; family < FAMILIES; family++) {
    for (let k = 0; k < PER_FAMILY; k++) {
      files[`images/train/fam-${family}-${k}.png`] = await familyPicture(family, random);
      if (family === 0) files[`labels/train/fam-${family}-${k}.txt`] = '0 0.5 0.5 0.3 0.3\n';
    }
  }
  return files;
}

/** Adjusted Rand index of two labellings of the same items (1: the same partition, about 0: chance). */
function adjustedRandIndex(a: number[], b: number[]): number {
  const pairs = (n: number) => (n * (n - 1)) / 2;
  const count = (keys: string[]) =>
    keys.reduce((map, key) => map.set(key, (map.get(key) ?? 0) + 1), new Map<string, number>());
  const sum = (map: Map<string, number>) => [...map.values()].reduce((total, n) => total + pairs(n), 0);
  const both = sum(count(a.map((x, i) => `${x}/${b[i]}`)));
  const [sumA, sumB] = [sum(count(a.map(String))), sum(count(b.map(String)))];
  const expected = (sumA * sumB) / pairs(a.length);
  return (both - expected) / ((sumA + sumB) / 2 - expected);
}

const datasetId = await createDataset(world, world.alice, { dataset: 'families', name: 'families' });

t.test('no layout before an analysis', async (t) => {
  expectError(t, await clustering('families'), 404, /no layout yet/);
  t.equal((await drawingPoints('families')).status, 404);
});

t.test('the layout of an analysis: its islands are the families', async (t) => {
  const job = await ingestArchive(
    t,
    world,
    world.alice,
    'alice',
    'families',
    datasetId,
    'families.zip',
    await zipOf(await families()),
  );
  t.equal(job.status, 'completed', job.error ?? 'ingested');
  const started = await call<{ jobId: string }>(server, 'POST', '/api/datasets/alice/families/embeddings', {
    key: world.alice,
  });
  t.equal(started.status, 202);
  const analysis = await waitForJob(t, world, world.alice, started.body.jobId, { seconds: 180 });
  t.match(
    analysis,
    { status: 'completed', result: { embedded: IMAGES, laidOut: IMAGES } },
    analysis.error ?? 'analyzed and laid out',
  );

  const response = await clustering('families');
  t.equal(response.status, 200);
  const page = response.body;
  t.match(
    page,
    { total: IMAGES, offset: 0, limit: 50_000, hasMore: false, nextOffset: null },
    'one page holds the whole layout by default',
  );
  t.ok(Date.parse(page.updatedAt) > 0, 'dated');
  const images = (
    await call<{ images: Array<{ id: string; name: string }> }>(
      server,
      'GET',
      '/api/datasets/alice/families/images?limit=100',
      { key: world.alice },
    )
  ).body.images;
  const familyOf = new Map(images.map((image) => [image.id, Number(/^fam-(\d)-/.exec(image.name)![1])]));
  t.equal(page.images.length, IMAGES);
  t.same(
    page.images.map((point) => point.id),
    [...familyOf.keys()].sort(),
    'every image once, in ID order',
  );
  t.ok(
    page.images.every((point) => Number.isFinite(point.umapX) && Number.isFinite(point.umapY)),
    'finite coordinates',
  );

  const clusters = page.images.map((point) => point.cluster!);
  const truth = page.images.map((point) => familyOf.get(point.id)!);
  const ari = adjustedRandIndex(clusters, truth);
  const islands = new Map<number, number[]>();
  page.images.forEach((point, i) => islands.set(point.cluster!, [...(islands.get(point.cluster!) ?? []), truth[i]]));
  t.comment(
    `adjusted Rand index of islands against families: ${ari.toFixed(3)}; islands: ${[...islands]
      .sort((a, b) => a[0] - b[0])
      .map(([island, members]) => `${island}: [${members.join('')}]`)
      .join(' ')}`,
  );
  t.ok(ari >= 0.8, `ARI ${ari.toFixed(3)} >= 0.8 (with ${IMAGES - LAYOUT_SAMPLE} images placed, not laid out)`);
  const sizes = [...islands]
    .filter(([island]) => island >= 0)
    .sort((a, b) => a[0] - b[0])
    .map(([, members]) => members.length);
  t.same(
    sizes,
    [...sizes].sort((a, b) => b - a),
    'islands are ranked by size, 0 the largest',
  );

  const disc = page.images.find((point) => familyOf.get(point.id) === 0)!;
  t.match(
    disc,
    { split: 'train', classIds: [0], width: SIZE, height: SIZE, labelCount: 1, labeled: true, missing: false },
    "an image's fields",
  );
  t.ok(disc.bytes! > 0, 'its size in bytes');
  t.match(
    page.images.find((point) => familyOf.get(point.id) === 1),
    { classIds: [], labelCount: 0, labeled: false },
  );

  // Paging: four pages of 25, 25, 25 and 5 make the same layout.
  const pages: Page[] = [];
  for (let offset = 0; offset !== null;) {
    const next = (await clustering('families', `?offset=${offset}&limit=25`)).body;
    pages.push(next);
    offset = next.nextOffset!;
    if (!next.hasMore) break;
  }
  t.same(
    pages.map((p) => [p.offset, p.images.length, p.hasMore, p.nextOffset]),
    [
      [0, 25, true, 25],
      [25, 25, true, 50],
      [50, 25, true, 75],
      [75, 5, false, null],
    ],
  );
  t.same(
    pages.flatMap((p) => p.images),
    page.images,
    'the pages together are the layout',
  );
  t.same((await clustering('families', `?offset=${IMAGES}`)).body.images, [], 'past the end: empty');
  t.same((await clustering('families', '?offset=2147483647')).body.images, [], 'far past the end: empty');
  const drawn = await drawingPoints('families');
  t.match(drawn, { status: 200, type: 'application/octet-stream', length: IMAGES * 32 });
  t.same(drawn.points, asDrawn(page.images), 'the binary form: the same points, fields and order');
  expectError(t, await clustering('families', '?limit=50001'), 400);
  expectError(t, await clustering('families', '?offset=-1'), 400);

  // An analysis with nothing new keeps the layout; a deleted image stays in it, missing.
  const again = await waitForJob(
    t,
    world,
    world.alice,
    (await call<{ jobId: string }>(server, 'POST', '/api/datasets/alice/families/embeddings', { key: world.alice }))
      .body.jobId,
  );
  t.match(
    again,
    { status: 'completed', result: { embedded: 0, laidOut: null } },
    'nothing changed: the layout is kept',
  );
  t.same((await clustering('families')).body, page, 'the same layout');
  t.equal((await call(server, 'DELETE', `/api/images/${disc.id}`, { key: world.alice })).status, 200);
  const after = (await clustering('families')).body;
  t.match(
    after.images.find((point) => point.id === disc.id),
    {
      id: disc.id,
      umapX: disc.umapX,
      umapY: disc.umapY,
      split: null,
      classIds: [],
      width: 0,
      height: 0,
      bytes: null,
      labelCount: 0,
      labeled: false,
      missing: true,
    },
  );
  t.same(
    (await drawingPoints('families')).points,
    asDrawn(after.images),
    'the binary form leaves the missing image out',
  );

  // The next analysis lays out the 79 images left; the same vectors give the same layout.
  const relaid = await waitForJob(
    t,
    world,
    world.alice,
    (await call<{ jobId: string }>(server, 'POST', '/api/datasets/alice/families/embeddings', { key: world.alice }))
      .body.jobId,
  );
  t.match(relaid, { status: 'completed', result: { embedded: 0, laidOut: IMAGES - 1 } });
  const first = (await clustering('families')).body;
  t.equal(first.total, IMAGES - 1);
  t.notOk(
    first.images.some((point) => point.missing),
    'no image missing',
  );
  await server.orm.em.fork().getConnection().execute('delete from dataset_layouts where dataset_id = ?', [datasetId]);
  await waitForJob(
    t,
    world,
    world.alice,
    (await call<{ jobId: string }>(server, 'POST', '/api/datasets/alice/families/embeddings', { key: world.alice }))
      .body.jobId,
  );
  const second = (await clustering('families')).body;
  t.same(second.images, first.images, 'laid out again from the same vectors: the same layout');
});

t.test('other workspaces and bad paths', async (t) => {
  expectError(t, await clustering('families', '', world.bobby), 404, 'Dataset alice/families not found');
  expectError(t, await clustering('no-such-dataset'), 404);
  t.equal((await call(server, 'GET', '/api/datasets/alice/families/images/clustering')).status, 401, 'needs a key');
  t.equal((await drawingPoints('families', world.bobby)).status, 404, "another workspace's: not found");
});
