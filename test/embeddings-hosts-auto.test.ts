// Dataset analysis under EMBEDDING_PLACEMENT=auto (the default): without a GPU host it embeds on the control plane;
// with a connected host that has a free GPU and runs the inference environment (a scripted host over the real
// protocol: this machine has no GPU) its chunk asks for that GPU and the embed command for CUDA; a chunk that fails
// there hands the images to the control plane's CPU and the analysis still completes.
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { eventually } from './helpers/host-jobs.ts';
import { pictures } from './helpers/pictures.ts';
import { seededRandom } from './helpers/random.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';
import { enrollHost, WorkerClient } from './helpers/worker-client.ts';

t.setTimeout(5 * 60_000);
const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1' });
const { server, alice } = world;
const em = () => server.orm.em.fork() as EntityManager;
const files = await pictures(seededRandom(11), 4);

async function dataset(slug: string): Promise<string> {
  const id = await createDataset(world, alice, { dataset: slug, name: slug });
  const entries = Object.fromEntries(files.map((bytes, i) => [`images/train/p${i}.png`, bytes]));
  const job = await ingestArchive(t, world, alice, 'alice', slug, id, `${slug}.zip`, await zipOf(entries));
  if (job.status !== 'completed') throw new Error(`ingest ${job.status}: ${job.error}`);
  return id;
}
const analyze = async (slug: string) =>
  (await call<{ jobId: string }>(server, 'POST', `/api/datasets/alice/${slug}/embeddings`, { key: alice })).body.jobId;
const chunks = (datasetId: string) =>
  query(em(), `select id from jobs where kind = 'embedding-chunk' and subject_id = ?`, [datasetId]);

t.test('no GPU host: the control plane embeds', async (t) => {
  const datasetId = await dataset('here');
  const job = await waitForJob(t, world, alice, await analyze('here'), { seconds: 120 });
  t.match(job, { status: 'completed', result: { embedded: files.length, placement: 'control-plane' } });
  t.same(await chunks(datasetId), [], 'no host job');
});

t.test(
  'a free GPU on a connected host takes the chunk; its failure hands the images to the control plane',
  async (t) => {
    const { hostId, workerKey } = await enrollHost(server, 'gpu-host', 'alice');
    const { client } = await WorkerClient.welcomed(server, workerKey);
    client.beat();
    t.teardown(() => client.ws.close());
    client.send({ type: 'capabilities', exporters: [], missingExporters: {}, services: ['inference'] });
    await eventually(
      async () =>
        (await query(em(), `select 1 from hosts where id = ? and 'inference' = any(services)`, [hostId])).length > 0,
      'its capabilities',
    );
    const datasetId = await dataset('gpu');

    const analysis = await analyze('gpu');
    const assigned = await client.nextOf('job.assign', 30_000);
    t.match(
      assigned.spec,
      {
        environment: 'inference',
        command: ['vp-inference-server', 'embed'],
        gpus: { count: 1, indexes: [0] },
        env: { VP_DEVICE: 'cuda' },
      },
      'the GPU, and CUDA',
    );
    t.equal(assigned.spec.inputs?.length, 2, 'the embedder and the manifest, by signed URLs');
    const manifest = (await (
      await fetch(assigned.spec.inputs!.find((input) => input.path === 'manifest.json')!.url)
    ).json()) as { images: Array<{ url: string }> };
    t.equal(manifest.images.length, files.length, 'every image of the dataset');
    t.equal((await fetch(manifest.images[0]!.url)).status, 200, "an image's signed URL works");
    client.send({ type: 'job.accepted', jobId: assigned.jobId });
    client.send({
      type: 'job.finished',
      jobId: assigned.jobId,
      outcome: 'failed',
      exitCode: 1,
      error: 'CUDA out of memory',
    });
    const job = await waitForJob(t, world, alice, analysis, { seconds: 120 });
    t.match(
      job,
      { status: 'completed', result: { embedded: files.length, placement: 'control-plane' } },
      'the control plane took over',
    );
    t.equal((await chunks(datasetId)).length, 1, 'after the one chunk');
    t.equal(
      (await query(em(), 'select 1 from image_embeddings where dataset_id = ?', [datasetId])).length,
      files.length,
    );
  },
);
