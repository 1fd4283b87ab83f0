// Dataset analysis (GET/POST/DELETE /api/datasets/{owner}/{dataset}/embeddings) with the real image embedder (the
// MobileNetV2 that installer/models/build-models.sh builds into .cache/models): edited copies of synthetic pictures find
// their original among their nearest stored vectors; a second analysis embeds nothing, one after new images embeds only
// those; a cancel stops it and the next goes on from there; other workspaces see nothing; no model is a 503, a model
// file that does not load fails the job with the reason.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t from 'tap';
import { zipOf } from './helpers/archives.ts';
import { ingestArchive, waitForJob, type JobView } from './helpers/archives.ts';
import { expectError } from './helpers/expect.ts';
import { copiesOf, picture } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call, startTestServer } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface Summary {
  analyzedAt: string | null;
  embeddingsCount: number;
  latestImageAt: string | null;
  activeJob: null | {
    id: string;
    status: string;
    progress: null | { stage: string; percent: number; processed?: number; total?: number };
    createdAt: string;
  };
}

const BASES = 24;
const CANCELLED_IMAGES = 400;

const world = await startWorld(t);
const { server } = world;
const path = (slug: string, owner = 'alice') => `/api/datasets/${owner}/${slug}/embeddings`;
const summary = async (slug: string, key = world.alice) => {
  const response = await call<Summary>(server, 'GET', path(slug), { key });
  t.equal(response.status, 200, `GET ${slug}`);
  return response.body;
};
const analyze = async (slug: string, key = world.alice): Promise<string> => {
  const response = await call<{ jobId: string }>(server, 'POST', path(slug), { key });
  if (response.status !== 202) throw new Error(`POST embeddings: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.jobId;
};
const analyzed = async (slug: string): Promise<JobView> =>
  waitForJob(t, world, world.alice, await analyze(slug), { seconds: 120 });

async function nearDuplicates(): Promise<Record<string, Buffer>> {
  const random = seededRandom(20);
  const files: Record<string, Buffer> = {};
  for (let b = 0; b < BASES; b++) {
    const base = await picture(random);
    files[`images/train/base-${b}.png`] = base;
    (await copiesOf(base)).forEach(
      (copy, k) => (files[`images/train/copy-${b}-${k}.${k === 0 ? 'png' : 'jpg'}`] = copy),
    );
  }
  return files;
}

async function ingest(slug: string, datasetId: string, files: Record<string, Buffer>): Promise<void> {
  const job = await ingestArchive(t, world, world.alice, 'alice', slug, datasetId, `${slug}.zip`, await zipOf(files));
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
}

/** The stored vectors of the dataset's images, by image name (read from PostgreSQL as the analysis left them). */
async function storedVectors(datasetId: string): Promise<Map<string, Float32Array>> {
  const rows = await server.orm.em
    .fork()
    .getConnection()
    .execute<Array<{ name: string; vector: Buffer }>>(
      'select i.name, e.vector from image_embeddings e join images i on i.id = e.image_id where e.dataset_id = ?',
      [datasetId],
    );
  return new Map(rows.map((row) => [row.name, new Float32Array(new Uint8Array(row.vector).buffer)]));
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, value, i) => sum + value * b[i], 0);
const files = await nearDuplicates();
const images = Object.keys(files).length;

t.test('an analysis embeds every image; edited copies find their original among the 3 nearest', async (t) => {
  const datasetId = await createDataset(world, world.alice, { dataset: 'near-dups', name: 'near dups' });
  t.same(
    await summary('near-dups'),
    { analyzedAt: null, embeddingsCount: 0, latestImageAt: null, activeJob: null },
    'nothing before any image or analysis',
  );
  await ingest('near-dups', datasetId, files);
  const before = await summary('near-dups');
  t.equal(before.analyzedAt, null, 'not analyzed yet');
  t.ok(before.latestImageAt, 'the newest image is dated');

  const started = Date.now();
  const job = await analyzed('near-dups');
  t.equal(job.status, 'completed', job.error ?? 'the analysis completed');
  t.match(job.result, { embedded: images, failedDownloads: 0, failedInference: 0 }, 'every image embedded');
  t.match(job.progress, { stage: 'done', percent: 100, processed: images, total: images }, 'progress reads done');
  t.comment(`${images} images embedded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const after = await summary('near-dups');
  t.equal(after.embeddingsCount, images);
  t.equal(after.activeJob, null);
  t.ok(after.analyzedAt && after.analyzedAt >= after.latestImageAt!, 'analyzed after the newest image arrived');

  const vectors = await storedVectors(datasetId);
  t.equal(vectors.size, images);
  const first = vectors.values().next().value!;
  t.equal(first.length, 1280, '1280-d vectors');
  t.ok(Math.abs(dot(first, first) - 1) < 1e-4, 'unit length');
  // Exact search, each copy against every other stored image (its sibling copies included), and against the originals only.
  const recallAt3 = (among: (name: string) => boolean) => {
    let found = 0;
    const misses: string[] = [];
    for (const [name, vector] of vectors) {
      const copy = /^copy-(\d+)-\d+\./.exec(name);
      if (!copy) continue;
      const nearest = [...vectors]
        .filter(([other]) => other !== name && among(other))
        .map(([other, v]) => [other, dot(vector, v)] as const)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([other]) => other);
      if (nearest.includes(`base-${copy[1]}.png`)) found += 1;
      else misses.push(`${name} -> ${nearest.join(', ')}`);
    }
    return { recall: found / (BASES * 3), misses };
  };
  const all = recallAt3(() => true);
  const originals = recallAt3((name) => name.startsWith('base-'));
  t.comment(
    `near-duplicate recall@3 among all ${images} images: ${all.recall.toFixed(3)}${all.misses.length ? ` (misses: ${all.misses.join('; ')})` : ''}`,
  );
  t.comment(
    `near-duplicate recall@3 among the ${BASES} originals: ${originals.recall.toFixed(3)}${originals.misses.length ? ` (misses: ${originals.misses.join('; ')})` : ''}`,
  );
  // Among all images a copy's two siblings compete with its original for the 3 places.
  t.ok(originals.recall >= 0.95, `recall@3 among the originals ${originals.recall.toFixed(3)} >= 0.95`);
  t.ok(all.recall >= 0.9, `recall@3 among all images ${all.recall.toFixed(3)} >= 0.9`);

  const again = await analyzed('near-dups');
  t.match(
    again,
    { status: 'completed', result: { embedded: 0 }, progress: { total: 0 } },
    'a second analysis embeds nothing',
  );

  const random = seededRandom(99);
  await ingest('near-dups', datasetId, {
    'images/train/late-0.png': await picture(random),
    'images/train/late-1.png': await picture(random),
  });
  t.match(
    await analyzed('near-dups'),
    { status: 'completed', result: { embedded: 2 }, progress: { total: 2 } },
    'only the new images are embedded',
  );
  t.equal((await summary('near-dups')).embeddingsCount, images + 2);
});

t.test('DELETE cancels the analysis in flight; the next one goes on from what it kept', async (t) => {
  // Enough pictures that the embedding (a few seconds) is still under way when the cancel arrives.
  const random = seededRandom(77);
  const many: Record<string, Buffer> = {};
  for (let n = 0; n < CANCELLED_IMAGES; n++) many[`images/train/picture-${n}.png`] = await picture(random);
  const datasetId = await createDataset(world, world.alice, { dataset: 'cancelled', name: 'cancelled' });
  await ingest('cancelled', datasetId, many);
  const jobId = await analyze('cancelled');
  const running = await waitForJob(t, world, world.alice, jobId, {
    until: (job) => job.status !== 'queued' && (job.progress?.processed ?? 0) > 0,
  });
  t.equal(running.status, 'running', 'cancelled while it runs');
  const cancelled = await call<{ cancelled: string | null }>(server, 'DELETE', path('cancelled'), { key: world.alice });
  t.same(cancelled.body, { cancelled: jobId }, 'the active job is cancelled');
  t.equal((await waitForJob(t, world, world.alice, jobId)).status, 'cancelled');
  const kept = (await summary('cancelled')).embeddingsCount;
  t.ok(kept > 0 && kept < CANCELLED_IMAGES, `stopped early (${kept} of ${CANCELLED_IMAGES} embedded)`);
  t.same(
    (await call(server, 'DELETE', path('cancelled'), { key: world.alice })).body,
    { cancelled: null },
    'nothing left to cancel',
  );
  const resumed = await analyzed('cancelled');
  t.match(
    resumed,
    { status: 'completed', result: { embedded: CANCELLED_IMAGES - kept } },
    'the next analysis embeds only the rest',
  );
  t.equal((await summary('cancelled')).embeddingsCount, CANCELLED_IMAGES);
});

t.test('one analysis at a time; progress shows while it runs', async (t) => {
  const datasetId = await createDataset(world, world.alice, { dataset: 'busy', name: 'busy' });
  await ingest('busy', datasetId, files);
  const jobId = await analyze('busy');
  expectError(t, await call(server, 'POST', path('busy'), { key: world.alice }), 409, /already in progress/);
  const active = (await summary('busy')).activeJob;
  t.match(active, { id: jobId, status: /^(queued|running)$/ }, 'GET shows the active job');
  t.equal((await waitForJob(t, world, world.alice, jobId, { seconds: 120 })).status, 'completed');
});

t.test('other workspaces and bad paths', async (t) => {
  for (const method of ['GET', 'POST', 'DELETE']) {
    expectError(
      t,
      await call(server, method, path('near-dups'), { key: world.bobby }),
      404,
      'Dataset alice/near-dups not found',
    );
    expectError(t, await call(server, method, path('no-such-dataset'), { key: world.alice }), 404);
    t.equal((await call(server, method, path('near-dups'))).status, 401, `${method} needs a key`);
  }
  expectError(t, await call(server, 'GET', path('Bad_Slug!'), { key: world.alice }), 400);
  await createDataset(world, world.team, { dataset: 'team-set', name: 'team set' });
  t.equal(
    (await call(server, 'GET', path('team-set', 'acme-team'), { key: world.viewer })).status,
    200,
    'a viewer reads the summary',
  );
  expectError(t, await call(server, 'POST', path('team-set', 'acme-team'), { key: world.viewer }), 403);
  expectError(t, await call(server, 'DELETE', path('team-set', 'acme-team'), { key: world.viewer }), 403);
});

t.test('without an embedding model an analysis is 503; the summary still answers', async (t) => {
  const bare = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { EMBEDDING_MODEL_PATH: '/nonexistent/image-embedder.onnx', RATE_LIMIT_DEFAULT: '1000000' },
  });
  expectError(t, await call(bare, 'POST', path('near-dups'), { key: world.alice }), 503, /EMBEDDING_MODEL_PATH/);
  t.match((await call<Summary>(bare, 'GET', path('near-dups'), { key: world.alice })).body, {
    embeddingsCount: images + 2,
    activeJob: null,
  });
});

t.test('a model file that does not load fails the analysis with a reason', async (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'vp-embedder-')), 'not-a-model.onnx');
  writeFileSync(file, 'not an ONNX model');
  t.teardown(() => rmSync(dirname(file), { recursive: true, force: true }));
  const broken = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { EMBEDDING_MODEL_PATH: file, RATE_LIMIT_DEFAULT: '1000000' },
  });
  await server.close(); // the broken server alone runs the job
  const started = await call<{ jobId: string }>(broken, 'POST', path('busy'), { key: world.alice });
  t.equal(started.status, 202);
  const job = await waitForJob(t, { server: broken }, world.alice, started.body.jobId);
  t.match(job, { status: 'failed', error: /does not load/ });
});
