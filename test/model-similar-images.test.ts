// Images like a model's worst validation images (GET /api/models/{owner}/{project}/{model}/similar-images) with the real
// image embedder: two families of edited copies (the worst images' and a well-scored one's) spread over datasets of
// several workspaces; the answer takes each worst image's nearest in turn, never from the training dataset nor of content
// it holds, never from another workspace's private dataset.
import t from 'tap';
import sharp from 'sharp';
import { Dataset } from '../control-plane/src/datasets/dataset.entity.ts';
import { Model } from '../control-plane/src/models/model.entity.ts';
import { imageNamed, pictureDataset } from './helpers/analyzed.ts';
import { expectError } from './helpers/expect.ts';
import { createModel, createProject } from './helpers/models.ts';
import { copiesOf, pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Similar {
  images: Array<{
    id: string;
    name: string;
    hash: string;
    width: number;
    height: number;
    thumbnailUrl: string;
    dataset: { owner: string; dataset: string; license: string };
    score: number;
  }>;
}

const world = await startWorld(t, { RATE_LIMIT_CLUSTERING: '1000000' });
const { server } = world;
const random = seededRandom(47);
const [a1, a2, b1, fresh, ...others] = await pictures(random, 11);
const [a1Crop, a1Flip] = await copiesOf(a1);
const [a2Crop, a2Flip] = await copiesOf(a2);
const [, b1Flip] = await copiesOf(b1);
const smaller = (bytes: Buffer) => sharp(bytes).resize(280, 210).jpeg({ quality: 70 }).toBuffer();
const [a1Small, a2Small] = [await smaller(a1), await smaller(a2)];

const trainingId = await pictureDataset(
  t,
  world,
  world.alice,
  { owner: 'alice', slug: 'training' },
  {
    'val/a1.png': a1,
    'val/a2.png': a2,
    'val/b1.png': b1,
    'held-copy.png': a1Crop,
    'train-1.png': others[0],
    'train-2.png': others[1],
  },
);
await pictureDataset(
  t,
  world,
  world.alice,
  { owner: 'alice', slug: 'pool' },
  {
    'a1-flip.jpg': a1Flip,
    'a2-flip.jpg': a2Flip,
    'held-copy-again.png': a1Crop,
    'b1-flip.jpg': b1Flip,
    'pool-1.png': others[2],
    'pool-2.png': others[3],
  },
);
await pictureDataset(
  t,
  world,
  world.team,
  { owner: 'acme-team', slug: 'team-pool' },
  { 'a2-team.jpg': a2Small, 'team-1.png': others[4] },
);
await pictureDataset(
  t,
  world,
  world.bobby,
  { owner: 'bobby', slug: 'open' },
  { 'a1-public.jpg': a1Small, 'open-1.png': others[5] },
  { visibility: 'public' },
);
await pictureDataset(
  t,
  world,
  world.bobby,
  { owner: 'bobby', slug: 'closed' },
  { 'a2-private.png': a2Crop, 'closed-1.png': others[6] },
);
const unanalyzedId = await pictureDataset(
  t,
  world,
  world.alice,
  { owner: 'alice', slug: 'unanalyzed' },
  { 'val/fresh.png': fresh },
  { analyze: false },
);

const hash = async (owner: string, slug: string, name: string, key = world.alice) =>
  (await imageNamed(world, key, owner, slug, name)).hash;
const [hashA1, hashA2, hashB1] = [
  await hash('alice', 'training', 'a1.png'),
  await hash('alice', 'training', 'a2.png'),
  await hash('alice', 'training', 'b1.png'),
];
const trainingHashes = new Set(
  (
    await call<{ images: Array<{ hash: string }> }>(server, 'GET', '/api/datasets/alice/training/images', {
      key: world.alice,
    })
  ).body.images.map((image) => image.hash),
);

/** A model trained on `datasetId` whose validation scored `worst` worst (and `best` best), as a training reports it. */
async function trainedModel(
  key: string,
  project: string,
  slug: string,
  datasetId: string,
  worst: string[],
  best: string[],
): Promise<void> {
  await createModel(world, key, { project, model: slug });
  const em = server.orm.em.fork();
  const model = await em.findOneOrFail(Model, { project: { slug: project }, slug });
  const rows = [...worst.map((image) => [image, 0, 2, 1]), ...best.map((image) => [image, 3, 0, 0])];
  model.analysis = rows.map(([image, tp, fp, fn]) => ({ image, tp, fp, fn }));
  model.validationExtremes = {
    population: rows.length,
    extremes: { worst: worst.map((image) => [image, 0, 2, 1]), best: best.map((image) => [image, 3, 0, 0]) },
  };
  model.dataset = em.getReference(Dataset, datasetId);
  await em.flush();
}

await createProject(world, world.alice, { project: 'vision', name: 'vision' });
await trainedModel(world.alice, 'vision', 'detector', trainingId, [hashA1, hashA2], [hashB1]);
await trainedModel(
  world.alice,
  'vision',
  'not-embedded',
  unanalyzedId,
  [await hash('alice', 'unanalyzed', 'fresh.png')],
  [],
);
await createModel(world, world.alice, { project: 'vision', model: 'untrained' });

async function similar(key: string, path: string, suffix = ''): Promise<Similar['images']> {
  const response = await call<Similar>(server, 'GET', `/api/models/${path}/similar-images${suffix}`, { key });
  if (response.status !== 200) throw new Error(`similar: ${response.status} ${JSON.stringify(response.body)}`);
  t.comment(
    response.body.images
      .map((image) => `${image.dataset.owner}/${image.dataset.dataset}/${image.name} ${image.score}`)
      .join('; '),
  );
  return response.body.images;
}

t.test(
  "the worst images' siblings come first, each worst image in turn, from other datasets the key may see",
  async (t) => {
    const images = await similar(world.alice, 'alice/vision/detector');
    const names = images.map((image) => image.name);
    const [a1Siblings, a2Siblings] = [
      ['a1-flip.jpg', 'a1-public.jpg'],
      ['a2-flip.jpg', 'a2-team.jpg'],
    ];
    t.ok(
      a1Siblings.includes(names[0]) && a2Siblings.includes(names[1]),
      "the worst image's nearest, then the second worst's",
    );
    t.same(
      new Set(names.slice(0, 4)),
      new Set([...a1Siblings, ...a2Siblings]),
      "then each one's second: own, public and team datasets'",
    );
    t.ok(
      names.indexOf('b1-flip.jpg') === -1 || names.indexOf('b1-flip.jpg') >= 4,
      'the well-scored image’s sibling is not among them',
    );
    t.notOk(
      images.some((image) => image.dataset.dataset === 'training'),
      'nothing of the training dataset',
    );
    t.notOk(
      images.some((image) => trainingHashes.has(image.hash)),
      'nor content it holds (its copy in another dataset)',
    );
    t.notOk(names.includes('held-copy-again.png'));
    t.notOk(
      images.some((image) => image.dataset.dataset === 'closed'),
      "nothing of bobby's private dataset",
    );
    t.equal(new Set(images.map((image) => image.id)).size, images.length, 'each image once');
    t.ok(
      images.every((image) => image.score >= 0 && image.score <= 1),
      'scores in 0..1',
    );
    t.match(
      images.find((image) => image.name === 'a1-public.jpg'),
      { dataset: { owner: 'bobby', dataset: 'open', license: 'None' }, thumbnailUrl: /^http/, width: 280, height: 210 },
    );
  },
);

t.test('hashes pick worst images; hashes outside the worst cohort are ignored', async (t) => {
  const names = (await similar(world.alice, 'alice/vision/detector', `?hashes=${hashA2.toUpperCase()},${hashB1}`)).map(
    (image) => image.name,
  );
  t.same(new Set(names.slice(0, 2)), new Set(['a2-flip.jpg', 'a2-team.jpg']), "the second worst image's siblings only");
  t.same(
    await similar(world.alice, 'alice/vision/detector', `?hashes=${hashB1}`),
    [],
    'a well-scored image alone: nothing to search like',
  );
  t.same(
    (await similar(world.alice, 'alice/vision/detector', '?hashes=')).length > 0,
    true,
    'an empty list of hashes: the whole cohort',
  );
});

t.test("another workspace's model finds nothing of alice's private datasets", async (t) => {
  const openId = (await server.orm.em.fork().findOneOrFail(Dataset, { slug: 'open' })).id;
  await createProject(world, world.bobby, { project: 'bob-vision', name: 'bob-vision' });
  await trainedModel(
    world.bobby,
    'bob-vision',
    'bob-detector',
    openId,
    [await hash('bobby', 'open', 'a1-public.jpg', world.bobby)],
    [],
  );
  const images = await similar(world.bobby, 'bobby/bob-vision/bob-detector');
  t.ok(
    images.every((image) => image.dataset.owner === 'bobby'),
    'only its own images (alice and the team are private)',
  );
  t.notOk(
    images.some((image) => image.dataset.dataset === 'open'),
    'nothing of its training dataset',
  );
});

t.test('an empty list without per-image results; 404 when the worst images are not embedded', async (t) => {
  t.same(await similar(world.alice, 'alice/vision/untrained'), []);
  expectError(
    t,
    await call(server, 'GET', '/api/models/alice/vision/not-embedded/similar-images', { key: world.alice }),
    404,
    /is embedded yet: analyze its training dataset/,
  );
});

t.test('errors', async (t) => {
  const path = '/api/models/alice/vision/detector/similar-images';
  expectError(
    t,
    await call(server, 'GET', '/api/models/alice/vision/nope/similar-images', { key: world.alice }),
    404,
    'Model alice/vision/nope not found',
  );
  expectError(t, await call(server, 'GET', path, { key: world.bobby }), 404, 'Model alice/vision/detector not found');
  t.equal((await call(server, 'GET', path)).status, 401, 'a key is needed');
  expectError(t, await call(server, 'GET', `${path}?hashes=not-a-hash`, { key: world.alice }), 400, /hash/);
  const many = Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(64, '0')).join(',');
  expectError(t, await call(server, 'GET', `${path}?hashes=${many}`, { key: world.alice }), 400, /at most 100/);
});

t.test('it counts in the Clustering rate class, with dataset clustering', async (t) => {
  const limited = await startWorld(t, { RATE_LIMIT_CLUSTERING: '2' });
  await createProject(limited, limited.alice, { project: 'vision', name: 'vision' });
  await createModel(limited, limited.alice, { project: 'vision', model: 'untrained' });
  await createDataset(limited, limited.alice, { dataset: 'empty', name: 'empty' });
  const path = '/api/models/alice/vision/untrained/similar-images';
  t.equal((await call(limited.server, 'GET', path, { key: limited.alice })).status, 200);
  t.equal(
    (await call(limited.server, 'GET', '/api/datasets/alice/empty/images/clustering', { key: limited.alice })).status,
    404,
    'no layout yet, counted',
  );
  expectError(t, await call(limited.server, 'GET', path, { key: limited.alice }), 429, /clustering/i, [
    'retryAfter',
    'resetAt',
  ]);
});
