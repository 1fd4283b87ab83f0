// Similar images (GET /api/images/{imageId}/similar) with the real image embedder and the usearch index: edited copies
// of a picture in other datasets are found (own, a team's, another workspace's public one), never in another workspace's
// private dataset; the source dataset, identical copies and datasets holding them are left out; a query image not
// analyzed yet is embedded on the fly; images analyzed or deleted later show up or go at the next search.
import t from 'tap';
import sharp from 'sharp';
import { analyze as analyzeDataset, imageNamed, pictureDataset } from './helpers/analyzed.ts';
import { expectError } from './helpers/expect.ts';
import { copiesOf, picture, pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call, startTestServer } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';

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

const world = await startWorld(t);
const { server } = world;
const random = seededRandom(31);
const query = await picture(random);
const [crop, flip, jitter] = await copiesOf(query);
const smaller = await sharp(query).resize(280, 210).jpeg({ quality: 70 }).toBuffer();
const distractors = await pictures(random, 6);

const dataset = (
  key: string,
  owner: string,
  slug: string,
  files: Record<string, Buffer>,
  options: { visibility?: string; analyze?: boolean } = {},
) => pictureDataset(t, world, key, { owner, slug }, files, options);
const analyze = (key: string, owner: string, slug: string) => analyzeDataset(t, world, key, owner, slug);
const imageId = async (key: string, owner: string, slug: string, name: string) =>
  (await imageNamed(world, key, owner, slug, name)).id;

async function similar(key: string, id: string, suffix = ''): Promise<Similar['images']> {
  const response = await call<Similar>(server, 'GET', `/api/images/${id}/similar${suffix}`, { key });
  if (response.status !== 200) throw new Error(`similar: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.images;
}

const vectorCount = async (id: string) =>
  (
    await server.orm.em
      .fork()
      .getConnection()
      .execute<Array<{ n: number }>>('select count(*)::int as n from image_embeddings where image_id = ?', [id])
  )[0].n;

// The query's own dataset is never analyzed: its image is embedded when asked about.
await dataset(
  world.alice,
  'alice',
  'source',
  { 'query.png': query, 'source-sibling.png': crop, 'source-other.png': distractors[0] },
  { analyze: false },
);
await dataset(world.alice, 'alice', 'mine', {
  'mine-sibling.jpg': flip,
  'mine-other-1.png': distractors[1],
  'mine-other-2.png': distractors[2],
});
await dataset(world.alice, 'alice', 'holds-copy', { 'copy.png': query, 'near-copy.jpg': jitter });
await dataset(world.team, 'acme-team', 'team-set', { 'team-sibling.jpg': smaller, 'team-other.png': distractors[3] });
await dataset(
  world.bobby,
  'bobby',
  'open',
  { 'public-sibling.jpg': jitter, 'public-other.png': distractors[4] },
  { visibility: 'public' },
);
await dataset(world.bobby, 'bobby', 'closed', { 'private-sibling.png': crop, 'private-other.png': distractors[5] });
const queryId = await imageId(world.alice, 'alice', 'source', 'query.png');

t.test(
  "edited copies are found in the key's workspace, its user's team and public datasets, never in another workspace's private one",
  async (t) => {
    t.equal(await vectorCount(queryId), 0, 'the query image has no vector before');
    const images = await similar(world.alice, queryId);
    t.equal(await vectorCount(queryId), 1, 'it was embedded and kept');
    const names = images.map((image) => image.name);
    t.comment(
      images.map((image) => `${image.dataset.owner}/${image.dataset.dataset}/${image.name} ${image.score}`).join('; '),
    );
    t.same(
      new Set(names.slice(0, 3)),
      new Set(['mine-sibling.jpg', 'public-sibling.jpg', 'team-sibling.jpg']),
      'the three siblings come first',
    );
    t.notOk(
      names.includes('private-sibling.png') || names.includes('private-other.png'),
      "nothing of bobby's private dataset",
    );
    t.notOk(
      images.some((image) => image.dataset.dataset === 'source'),
      'nothing of the source dataset',
    );
    t.notOk(
      images.some((image) => image.dataset.dataset === 'holds-copy'),
      'nothing of a dataset holding a copy of the query',
    );
    t.ok(
      images.every((image) => image.id !== queryId && image.score >= 0 && image.score <= 1),
      'scores in 0..1',
    );
    t.same(
      images.map((image) => image.score),
      images.map((image) => image.score).sort((a, b) => b - a),
      'most similar first',
    );
    t.ok(images[0].score > images.at(-1)!.score, 'a sibling scores above an unrelated picture');
    t.match(
      images.find((image) => image.name === 'public-sibling.jpg'),
      { dataset: { owner: 'bobby', dataset: 'open', license: 'None' }, thumbnailUrl: /^http/, width: 320, height: 240 },
    );
  },
);

t.test(
  'includeSourceDataset brings the source dataset and datasets holding copies back; identical copies stay out',
  async (t) => {
    await analyze(world.alice, 'alice', 'source');
    const names = (await similar(world.alice, queryId, '?includeSourceDataset=true')).map((image) => image.name);
    t.ok(names.includes('source-sibling.png'), 'the sibling in the source dataset');
    t.ok(names.includes('near-copy.jpg'), 'the edited copy beside the identical copy');
    t.notOk(names.includes('copy.png') || names.includes('query.png'), 'the query and its identical copy are left out');
    t.notOk(names.includes('private-sibling.png'), "still nothing of bobby's private dataset");
  },
);

t.test("another workspace's key sees its own and public images only", async (t) => {
  const bobbyQuery = await imageId(world.bobby, 'bobby', 'open', 'public-sibling.jpg');
  const images = await similar(world.bobby, bobbyQuery);
  t.ok(images.length > 0, 'it finds something');
  t.ok(
    images.every((image) => image.dataset.owner === 'bobby'),
    "nothing of alice's or the team's private datasets",
  );
  t.ok(
    images.some((image) => image.name === 'private-sibling.png'),
    'its own private dataset counts',
  );
});

t.test('images analyzed or deleted after the index was loaded show up or go at the next search', async (t) => {
  await dataset(world.alice, 'alice', 'late', {
    'late-sibling.png': await sharp(flip).resize(200, 150).png().toBuffer(),
  });
  const mineSibling = await imageId(world.alice, 'alice', 'mine', 'mine-sibling.jpg');
  t.equal((await call(server, 'DELETE', `/api/images/${mineSibling}`, { key: world.alice })).status, 200);
  const names = (await similar(world.alice, queryId)).map((image) => image.name);
  t.ok(names.includes('late-sibling.png'), 'the image analyzed since');
  t.notOk(names.includes('mine-sibling.jpg'), 'the deleted image');
});

t.test('access', async (t) => {
  expectError(
    t,
    await call(server, 'GET', `/api/images/${queryId}/similar`, { key: world.bobby }),
    404,
    `Image ${queryId} not found`,
  );
  t.equal((await call(server, 'GET', `/api/images/${queryId}/similar`)).status, 401, 'a key is needed');
  expectError(t, await call(server, 'GET', `/api/images/not-an-id/similar`, { key: world.alice }), 400);
  expectError(
    t,
    await call(server, 'GET', `/api/images/${queryId}/similar?includeSourceDataset=maybe`, { key: world.alice }),
    400,
  );
});

t.test('an image that cannot be embedded (no embedding model) is a 503 to retry, and nothing is stored', async (t) => {
  // Ingested before the second control plane starts: its job runner could take the ingest, whose upload is not in its data dir.
  await dataset(world.alice, 'alice', 'not-analyzed', { 'fresh.png': await picture(random) }, { analyze: false });
  const bare = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { EMBEDDING_MODEL_PATH: '/nonexistent/image-embedder.onnx', RATE_LIMIT_DEFAULT: '1000000' },
  });
  const id = await imageId(world.alice, 'alice', 'not-analyzed', 'fresh.png');
  t.equal(await vectorCount(id), 0, 'never analyzed');
  expectError(t, await call(bare, 'GET', `/api/images/${id}/similar`, { key: world.alice }), 503);
  t.equal(await vectorCount(id), 0, 'still no vector');
  t.equal(
    (await call(bare, 'GET', `/api/images/${queryId}/similar`, { key: world.alice })).status,
    503,
    'nor for an analyzed image: there is no model to compare with',
  );
});
