// Dataset analysis on worker hosts (EMBEDDING_PLACEMENT=hosts): a real vp-worker agent (process runtime, this
// machine's CPU: it has no GPU, so the chunk asks for a host's CPU slot and the embedder says cpu) embeds the dataset
// in an embedding-chunk host job with the inference server's embed command; the vectors equal the control plane's
// own for the same images (cosine > 0.999), the progress counts reach the total, and nothing is left in storage. A
// scripted host (the real protocol, the real output route) leaves a short vectors file and a result that is no JSON:
// the analysis fails with the reason and the control plane keeps answering; a cancelled analysis cancels its chunk.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { loadConfig } from '@vp/config';
import { AGENT_ROUTES, routePath } from '@vp/protocol';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { ImageEmbedder } from '../control-plane/src/embeddings/image-embedder.ts';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { eventually } from './helpers/host-jobs.ts';
import { pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';
import { enrollHost, testHardware, WorkerClient } from './helpers/worker-client.ts';

t.setTimeout(5 * 60_000);
const world = await startWorld(t, { EMBEDDING_PLACEMENT: 'hosts', WORKER_HEARTBEAT_SECONDS: '1' });
const { server } = world;
const em = () => server.orm.em.fork() as EntityManager;
const dir = mkdtempSync(join(tmpdir(), 'vp-embeddings-hosts-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const files = await pictures(seededRandom(7), 6);

/** A dataset of `owner` holding the pictures (train/p<i>.png). */
async function dataset(key: string, owner: string, slug: string, count = files.length): Promise<string> {
  const id = await createDataset(world, key, { dataset: slug, name: slug });
  const entries = Object.fromEntries(files.slice(0, count).map((bytes, i) => [`images/train/p${i}.png`, bytes]));
  const job = await ingestArchive(t, world, key, owner, slug, id, `${slug}.zip`, await zipOf(entries));
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
  return id;
}

const analyze = async (key: string, owner: string, slug: string) => {
  const response = await call<{ jobId: string }>(server, 'POST', `/api/datasets/${owner}/${slug}/embeddings`, { key });
  if (response.status !== 202) throw new Error(`POST embeddings: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.jobId;
};

const chunksOf = (datasetId: string) =>
  query<{ id: string; status: string; host_id: string | null; gpu_count: number; error: string | null }>(
    em(),
    `select id, status, host_id, gpu_count, error from jobs where kind = 'embedding-chunk' and subject_id = ? order by created_at`,
    [datasetId],
  );

t.test("a real agent embeds the dataset on its host: the control plane's vectors, progress to the total", async (t) => {
  const { enrollmentToken } = await server.services().hosts.connect('embedding-host', 'alice');
  const config = join(dir, 'agent.json');
  await enrollAgent(t, server.url, enrollmentToken, config);
  const agent = runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, 'work') });
  const [host] = await eventually(
    async () => {
      const rows = await query<{ id: string }>(
        em(),
        `select id from hosts where name = 'embedding-host' and state = 'connected' and 'inference' = any(services)`,
      );
      return rows.length > 0 && rows;
    },
    'the agent connected with the inference environment',
    60_000,
  );

  const datasetId = await dataset(world.alice, 'alice', 'on-hosts');
  const job = await waitForJob(t, world, world.alice, await analyze(world.alice, 'alice', 'on-hosts'), {
    seconds: 180,
  });
  t.equal(job.status, 'completed', `${job.error ?? ''}\n${agent.output().slice(-3000)}`);
  t.match(
    job.result,
    { embedded: files.length, placement: 'hosts', device: 'cpu', failedDownloads: 0, failedInference: 0 },
    'on hosts, on their CPU (no GPU here)',
  );
  t.match(job.progress, { processed: files.length, total: files.length }, 'every image counted');
  const chunks = await chunksOf(datasetId);
  t.match(
    chunks,
    [{ status: 'completed', host_id: host!.id, gpu_count: 0 }],
    'one chunk, on the agent, in its CPU slot',
  );

  const rows = await query<{ name: string; vector: Buffer }>(
    em(),
    'select i.name, e.vector from image_embeddings e join images i on i.id = e.image_id where e.dataset_id = ?',
    [datasetId],
  );
  t.equal(rows.length, files.length, 'a vector per image');
  const cfg = loadConfig({});
  const embedder = new ImageEmbedder({
    modelPath: cfg.embeddingModelPath,
    mean: cfg.embeddingMean,
    std: cfg.embeddingStd,
  });
  t.teardown(() => embedder.close());
  const local = await embedder.embed(files);
  for (const row of rows) {
    const index = Number(/p(\d+)\.png$/.exec(row.name)![1]);
    const mine = local[index] as Float32Array;
    const theirs = new Float32Array(new Uint8Array(row.vector).buffer);
    t.equal(theirs.length, mine.length, `${row.name}: as many values`);
    t.ok(
      mine.reduce((sum, value, i) => sum + value * theirs[i]!, 0) > 0.999,
      `${row.name}: the control plane's vector (cosine > 0.999)`,
    );
  }
  const left = await query(em(), `select 1 from job_outputs where job_id = ?`, [chunks[0]!.id]);
  t.same(left, [], "the chunk's outputs were removed once read");
  const manifests: string[] = [];
  for await (const { key } of server.storage.store.list(`ws/`))
    if (key.includes(`/jobs/${chunks[0]!.id}/`)) manifests.push(key);
  t.same(manifests, [], 'and its manifest');
});

t.test('a hostile host fails its analysis cleanly; a cancelled analysis cancels its chunk', async (t) => {
  const { hostId, workerKey } = await enrollHost(server, 'scripted-host', 'bobby');
  const { client } = await WorkerClient.welcomed(server, workerKey, {
    hardware: { ...testHardware, gpus: [], cpuOnly: true },
  });
  client.beat();
  t.teardown(() => client.ws.close());
  client.send({ type: 'capabilities', exporters: [], missingExporters: {}, services: ['inference'] });
  const put = (jobId: string, name: string, body: Buffer | string) =>
    fetch(`${server.url}${routePath(AGENT_ROUTES.output, { jobId, name })}?attempt=1`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${workerKey}`, 'content-type': 'application/octet-stream' },
      body,
    });
  await eventually(
    async () =>
      (await query(em(), `select 1 from hosts where id = ? and 'inference' = any(services)`, [hostId])).length > 0,
    'its capabilities',
  );
  const datasetId = await dataset(world.bobby, 'bobby', 'hostile', 2);

  const outputs: Array<[string, Record<string, Buffer | string>]> = [
    [
      'a short vectors file',
      { embeddings: JSON.stringify({ device: 'cuda', dims: 1280, images: [null, null] }), vectors: Buffer.alloc(100) },
    ],
    ['a result that is no JSON', { embeddings: '{"device": "cuda", "dims": 12', vectors: Buffer.alloc(0) }],
    [
      'vectors of another length',
      { embeddings: JSON.stringify({ device: 'cuda', dims: 4, images: [null, null] }), vectors: Buffer.alloc(32) },
    ],
    [
      'vectors that are not numbers',
      {
        embeddings: JSON.stringify({ device: 'cuda', dims: 1280, images: [null, null] }),
        vectors: Buffer.from(new Float32Array(2560).fill(Number.NaN).buffer),
      },
    ],
  ];
  for (const [what, files] of outputs) {
    const analysis = await analyze(world.bobby, 'bobby', 'hostile');
    const assigned = await client.nextOf('job.assign', 30_000);
    t.match(
      assigned.spec,
      { environment: 'inference', command: ['vp-inference-server', 'embed'], gpus: { count: 0 } },
      'the embed command in the inference environment',
    );
    client.send({ type: 'job.accepted', jobId: assigned.jobId });
    for (const [name, body] of Object.entries(files))
      t.equal((await put(assigned.jobId, name, body)).status, 200, `${what}: ${name} uploaded`);
    client.send({ type: 'job.finished', jobId: assigned.jobId, outcome: 'completed', exitCode: 0 });
    const job = await waitForJob(t, world, world.bobby, analysis, { seconds: 60 });
    t.equal(job.status, 'failed', what);
    t.match(
      job.error,
      /^Embedding on worker hosts failed: its host job \S+ left an invalid output: /,
      `${what}: the reason`,
    );
    t.equal(
      (await call(server, 'GET', '/api/datasets/bobby/hostile/embeddings', { key: world.bobby })).status,
      200,
      `${what}: the control plane still answers`,
    );
  }
  t.match(
    (
      await query<{ error: string }>(
        em(),
        `select error from jobs where kind = 'dataset-embeddings' and subject_id = ? order by created_at`,
        [datasetId],
      )
    ).map((row) => row.error),
    [
      /vectors are 100 bytes, not 2 images x 1280 values x 4/,
      /not a valid result/,
      /vectors have 4 values, not the model's 1280/,
      /not of unit length/,
    ],
    'each says what was wrong',
  );
  t.same(
    await query(em(), 'select 1 from image_embeddings where dataset_id = ?', [datasetId]),
    [],
    'nothing of theirs kept',
  );

  const analysis = await analyze(world.bobby, 'bobby', 'hostile');
  const assigned = await client.nextOf('job.assign', 30_000);
  client.send({ type: 'job.accepted', jobId: assigned.jobId });
  t.match(
    (
      await call<{ cancelled: string }>(server, 'DELETE', '/api/datasets/bobby/hostile/embeddings', {
        key: world.bobby,
      })
    ).body,
    { cancelled: analysis },
  );
  t.match(await client.nextOf('job.cancel', 30_000), { jobId: assigned.jobId }, 'the host is told to stop the chunk');
  client.send({ type: 'job.finished', jobId: assigned.jobId, outcome: 'cancelled' });
  t.equal((await waitForJob(t, world, world.bobby, analysis, { seconds: 60 })).status, 'cancelled');
  await eventually(async () => (await chunksOf(datasetId)).at(-1)?.status === 'cancelled', 'the chunk cancelled');
});
