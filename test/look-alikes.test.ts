// q in the dataset images list with the real image embedder and the vector index: the text matches first, then the
// images of the same dataset that look most like them (edited copies of the matched picture before other pictures),
// each once, never a text match again, passing the other filters, never another dataset's; stable pages and a total
// counting both; none before the dataset is analyzed, nor from a control plane without the embedding model.
import sharp from 'sharp';
import t from 'tap';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { copiesOf, picture } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Listing {
  images: Array<{ id: string; name: string; split: string }>;
  total?: number;
  hasMore: boolean;
}

const world = await startWorld(t);
const { server } = world;
const random = seededRandom(47);
const [sunrise, harbour] = [await picture(random), await picture(random)];
/** A crop, a flipped JPEG and a smaller JPEG of a picture. */
const edits = async (bytes: Buffer) => [
  ...(await copiesOf(bytes)).slice(0, 2),
  await sharp(bytes).resize(280, 210).jpeg({ quality: 70 }).toBuffer(),
];
const [a1, a2, a3] = await edits(sunrise);
const [b1, b2, b3] = await edits(harbour);
const others = await Promise.all(Array.from({ length: 4 }, () => picture(random)));

/** Family A: sunrise.png and its copies (a-*), one in val; family B: harbour.png and its copies (b-*); four others (o-*). */
const FILES: Record<string, Buffer> = {
  'images/train/sunrise.png': sunrise,
  'images/train/a-crop.png': a1,
  'images/val/a-flip.jpg': a2,
  'images/train/a-small.jpg': a3,
  'images/train/harbour.png': harbour,
  'images/train/b-crop.png': b1,
  'images/train/b-flip.jpg': b2,
  'images/val/b-small.jpg': b3,
  ...Object.fromEntries(others.map((bytes, i) => [`images/${i % 2 ? 'val' : 'train'}/o-${i}.png`, bytes])),
};
const FAMILY_A = ['a-crop.png', 'a-flip.jpg', 'a-small.jpg'];
const FAMILY_B = ['harbour.png', 'b-crop.png', 'b-flip.jpg', 'b-small.jpg'];

async function dataset(slug: string, files: Record<string, Buffer>): Promise<void> {
  const id = await createDataset(world, world.alice, { dataset: slug, name: slug });
  const ingested = await ingestArchive(t, world, world.alice, 'alice', slug, id, `${slug}.zip`, await zipOf(files));
  if (ingested.status !== 'completed') throw new Error(`ingest ${slug}: ${ingested.status} ${ingested.error}`);
}

async function analyze(slug: string): Promise<void> {
  const started = await call<{ jobId: string }>(server, 'POST', `/api/datasets/alice/${slug}/embeddings`, {
    key: world.alice,
  });
  if (started.status !== 202) throw new Error(`analyze ${slug}: ${started.status} ${JSON.stringify(started.body)}`);
  const job = await waitForJob(t, world, world.alice, started.body.jobId, { seconds: 120 });
  if (job.status !== 'completed') throw new Error(`analysis of ${slug}: ${job.status} ${job.error}`);
}

async function list(query: string, imageIds?: string[], on = server): Promise<Listing> {
  const response = imageIds
    ? await call<Listing>(on, 'POST', `/api/datasets/alice/families/images?${query}`, {
        key: world.alice,
        body: { imageIds },
      })
    : await call<Listing>(on, 'GET', `/api/datasets/alice/families/images?${query}`, { key: world.alice });
  if (response.status !== 200) throw new Error(`list ${query}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}
const names = (listing: Listing) => listing.images.map((image) => image.name);

await dataset('families', FILES);
// Another dataset of the same workspace holding the same pictures: nearer than anything, never listed.
await dataset('mirror', {
  'images/train/mirror-sunrise.png': sunrise,
  'images/train/mirror-a-crop.png': a1,
  'images/train/mirror-a-flip.jpg': a2,
});
await analyze('mirror');

t.test('before the analysis: the text matches only', async (t) => {
  const listing = await list('q=sunrise');
  t.same(names(listing), ['sunrise.png']);
  t.equal(listing.total, 1);
});

t.test('after it: the text match, then its copies, then the rest of the dataset, each once', async (t) => {
  await analyze('families');
  const listing = await list('q=sunrise');
  const found = names(listing);
  t.comment(found.join(' '));
  t.equal(found[0], 'sunrise.png', 'the text match first');
  t.same(new Set(found.slice(1, 4)), new Set(FAMILY_A), 'then the copies of the matched picture');
  t.notOk(
    found.slice(0, 4).some((name) => FAMILY_B.includes(name)),
    'no picture of the other family among them',
  );
  t.equal(new Set(found).size, found.length, 'each image once');
  t.same(
    [...found].sort(),
    Object.keys(FILES)
      .map((path) => path.split('/').pop()!)
      .sort(),
    'every image of this dataset, none of the mirror',
  );
  t.equal(listing.total, Object.keys(FILES).length, 'total: the text match and the look-alikes');

  const two = names(await list('q=r'));
  t.equal(new Set(two).size, two.length, 'a q matching several names: no text match again among the look-alikes');
  t.same(names(await list('q=nothing-matches')), [], 'no text match: no look-alikes');
  const byId = names(await list(`q=${(await list('q=harbour')).images[0].id}`));
  t.equal(byId[0], 'harbour.png', 'an image ID finds that image');
  t.notOk(
    byId.slice(1, 4).some((name) => !FAMILY_B.includes(name)),
    'then its look-alikes',
  );
});

t.test('pages with offset agree with the whole list', async (t) => {
  const whole = await list('q=sunrise&limit=100');
  const paged: string[] = [];
  for (let offset = 0; ; offset += 5) {
    const page = await list(`q=sunrise&limit=5&offset=${offset}`);
    t.equal(page.total, whole.total, `total at offset ${offset}`);
    paged.push(...names(page));
    if (!page.hasMore) break;
  }
  t.same(paged, names(whole), 'same images in the same order');
});

t.test('the other filters hold for look-alikes', async (t) => {
  const train = await list('q=sunrise&split=train');
  t.ok(
    train.images.every((image) => image.split === 'train'),
    'split=train: train images only',
  );
  t.notOk(names(train).includes('a-flip.jpg'), 'the copy in val is left out');
  t.equal(train.total, train.images.length);

  const all = await list('limit=100');
  const chosen = all.images
    .filter((image) => ['sunrise.png', 'a-crop.png', 'o-0.png', 'b-crop.png'].includes(image.name))
    .map((image) => image.id);
  const selected = await list('q=sunrise', chosen);
  t.equal(names(selected)[0], 'sunrise.png');
  t.equal(names(selected)[1], 'a-crop.png', 'the selection only, nearest first');
  t.same(new Set(names(selected)), new Set(['sunrise.png', 'a-crop.png', 'o-0.png', 'b-crop.png']));
  t.equal(selected.total, 4);
});

t.test('a control plane without the embedding model lists the text matches only', async (t) => {
  const bare = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { EMBEDDING_MODEL_PATH: '/nonexistent/image-embedder.onnx', RATE_LIMIT_DEFAULT: '1000000' },
  });
  const listing = await list('q=sunrise', undefined, bare);
  t.same(names(listing), ['sunrise.png']);
  t.equal(listing.total, 1);
});
