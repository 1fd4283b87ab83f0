// Deployments end to end: a real control plane, real vp-worker agents (process runtime) running the real inference
// server on a model trained by the suite: create → ready (its server answers at the live revision's URL, with the
// revision's token), a replacement whose model cannot load rolled back, a replacement under continuous load through the
// service URL and the platform's predict with no request failed (the old server drains), a camera read by the live
// server and given again to the next revision, scale to zero and the wake of a request through
// the DeploymentRouter (the cold start measured), and a host killed: its deployment restarted on the other host.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { enrollAgent, runAgent, type Spawned } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { predictAt } from './helpers/inference-server.ts';
import { startRtspSource } from './helpers/rtsp-source.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { query } from '../control-plane/src/db/sql.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

t.setTimeout(10 * 60_000);
const fixture = await trainedModel('detect');
const IDLE_SECONDS = 8;
const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '3',
  DEPLOYMENT_IDLE_SECONDS: String(IDLE_SECONDS),
  DEPLOYMENT_WAKE_SECONDS: '90',
  RATE_LIMIT_MUTATION: '1000',
  RATE_LIMIT_PREDICT: '100000',
});
const { server, alice } = world;
const dir = mkdtempSync(join(tmpdir(), 'vp-deployments-e2e-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const [picture] = await writeTestPictures(dir);
const pictureFile = picture!.file;
const image = readFileSync(pictureFile);
const em = () => server.orm.em.fork() as EntityManager;

/** A model whose automatic ONNX export is `onnx`; weights of its own (exports are shared by the weights' hash). */
async function model(slug: string, onnx: string): Promise<void> {
  const created = await createModel(world, alice, {
    project: 'vision',
    model: slug,
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, alice, created.id, Buffer.concat([readFileSync(fixture.pt), Buffer.from(slug)]));
  await seedOnnxExport(server, created.id, onnx);
}
await createProject(world, alice, { project: 'vision', name: 'vision' });
await model('detector', fixture.onnx);
await model('successor', fixture.onnx);
const broken = join(dir, 'broken.onnx');
writeFileSync(broken, 'not an onnx model');
await model('broken', broken);

/** An enrolled pool host of `region` running a real agent on the process runtime. */
async function agent(name: string, region: string): Promise<Spawned> {
  const { enrollmentToken } = await server.services().hosts.connect(name, undefined, region);
  const config = join(dir, `${name}.json`);
  await enrollAgent(t, server.url, enrollmentToken, config);
  const spawned = runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, name) });
  agents.push(spawned);
  return spawned;
}

const patch = (slug: string, body: Record<string, unknown>) =>
  call<Record<string, string>>(server, 'PATCH', `/api/deployments/alice/${slug}`, { key: alice, body });
const read = async (slug: string) =>
  (
    await call<{ deployment: { id: string; status: string; statusMessage?: string; model: string } }>(
      server,
      'GET',
      `/api/deployments/alice/${slug}`,
      { key: alice },
    )
  ).body.deployment;
const agents: Spawned[] = [];
/** Waits for the status; on a timeout the failure shows the deployment's log and the agents' output. */
async function untilStatus(slug: string, status: string, timeoutMs = 120_000) {
  try {
    return await eventually(
      async () => {
        const deployment = await read(slug);
        if (deployment.status === 'failed' && status !== 'failed') throw new Error(`${slug} failed`);
        return deployment.status === status && deployment;
      },
      `${slug} ${status}`,
      timeoutMs,
    );
  } catch (error) {
    const log = await query(
      em(),
      'select e.severity, e.message from deployment_events e join deployments d on d.id = e.deployment_id where d.slug = ? order by e.id',
      [slug],
    );
    throw new Error(
      `${(error as Error).message}: ${JSON.stringify(await read(slug))}\n${JSON.stringify(log)}\n${agents.map((spawned) => spawned.output().slice(-3000)).join('\n')}`,
    );
  }
}

async function createDeployment(
  slug: string,
  region: string,
  size: { cpu: number; memoryGi: number },
): Promise<string> {
  const body = { project: 'vision', model: 'detector', deployment: slug, name: slug, region, ...size };
  // The agent's capabilities (services) may still be on their way.
  const created = await eventually(
    async () => {
      const answer = await call<{ id: string }>(server, 'POST', '/api/deployments/alice', { key: alice, body });
      return answer.status === 201 && answer.body;
    },
    'a host that runs inference servers',
    30_000,
  );
  return created.id;
}

t.test('create → ready: the real inference server serves the model at the live revision', async (t) => {
  await agent('serving-host', 'us-central1');
  const id = await createDeployment('served', 'us-central1', { cpu: 2, memoryGi: 4 });
  await untilStatus('served', 'ready');
  const upstream = await server.deploymentRouter.upstream(em(), id);
  const health = (await (await fetch(`${upstream.url}/health`)).json()) as { healthy: boolean; modelSha256: string };
  t.match(
    health,
    { healthy: true, modelSha256: createHash('sha256').update(readFileSync(fixture.onnx)).digest('hex') },
    "the deployment's model",
  );
  const answer = await predictAt(upstream.url, image, { conf: '0.05' }, upstream.token);
  t.equal(answer.status, 200, JSON.stringify(answer.body).slice(0, 300));
  t.match(answer.body.metadata, { model: 'alice/vision/detector', task: 'detect' });
  t.equal(
    (await predictAt(upstream.url, image, {}, 'not-the-token')).status,
    401,
    "only the revision's token reaches it",
  );

  t.test('a replacement that cannot load its model is rolled back; the old server kept serving', async (t) => {
    t.equal((await patch('served', { action: 'replace', model: 'broken' })).status, 202);
    const rolledBack = await eventually(
      async () => {
        const deployment = await read('served');
        return deployment.status === 'ready' && deployment.statusMessage && deployment;
      },
      'the rollback',
      120_000,
    );
    t.match(rolledBack, { model: 'detector', statusMessage: /Revision 2 failed: .*still serving revision 1/ });
    const after = await server.deploymentRouter.upstream(em(), id);
    t.equal(after.url, upstream.url, 'the same server');
    t.equal((await predictAt(after.url, image, {}, after.token)).status, 200);
  });

  t.test('replaced under continuous load: every request answered, then the old server stops', async (t) => {
    const before = await server.deploymentRouter.upstream(em(), id);
    const [oldJob] = await query<{ job_id: string }>(em(), 'select job_id from deployment_revisions where id = ?', [
      before.revisionId,
    ]);
    const failures: string[] = [];
    let answered = 0;
    let loading = true;
    // Two clients on the service URL, one on the platform's predict, each sending its next request as the last returns.
    const client = async (url: string) => {
      while (loading) {
        const sent = await predictAt(url, image, {}, alice).catch((error: Error) => ({
          status: 0,
          body: { error: error.message },
        }));
        if (sent.status === 200) answered += 1;
        else failures.push(`${sent.status} ${sent.body.error ?? ''}`);
      }
    };
    const clients = [
      `${server.url}/svc/${id}`,
      `${server.url}/svc/${id}`,
      `${server.url}/api/deployments/alice/served`,
    ].map(client);
    await eventually(async () => answered >= 3, 'requests under way', 30_000);
    t.equal((await patch('served', { action: 'replace', model: 'successor' })).status, 202);
    await untilStatus('served', 'ready');
    const switched = await eventually(
      async () => {
        const upstream = await server.deploymentRouter.upstream(em(), id);
        return upstream.revisionId !== before.revisionId && upstream;
      },
      'the new revision live',
      120_000,
    );
    const answeredAtSwitch = answered;
    await eventually(
      async () => {
        const [job] = await query<{ status: string }>(em(), 'select status from jobs where id = ?', [oldJob!.job_id]);
        return job?.status === 'cancelled';
      },
      "the old revision's job to end",
      60_000,
    );
    await eventually(async () => answered >= answeredAtSwitch + 3, 'requests after the old server stopped', 30_000);
    loading = false;
    await Promise.all(clients);
    t.same(failures, [], `no request failed (${answered} answered)`);
    t.match(await read('served'), { status: 'ready', model: 'successor' });
    t.not(switched.url, before.url, 'a new server');
    t.notOk(
      await fetch(`${before.url}/health`).then(
        () => true,
        () => false,
      ),
      'the old server stopped',
    );
  });

  t.test('a camera: read by the live server, given again to the next revision, removed', async (t) => {
    const source = await startRtspSource(t, pictureFile);
    const camera = async () => {
      const answer = await fetch(`${server.url}/svc/${id}/camera`, { headers: { authorization: `Bearer ${alice}` } });
      return {
        status: answer.status,
        body: (await answer.json()) as {
          state: string;
          url: string | null;
          fps?: number;
          framesPredicted: number;
          latest?: unknown;
        },
      };
    };
    const applied = async () =>
      eventually(
        async () => {
          const deployment = (
            await call<{ deployment: { cameraApplying: boolean; camera?: string; statusMessage?: string } }>(
              server,
              'GET',
              '/api/deployments/alice/served',
              { key: alice },
            )
          ).body.deployment;
          return !deployment.cameraApplying && deployment;
        },
        'the camera change applied',
        60_000,
      );
    const streaming = async (what: string) =>
      eventually(
        async () => {
          const state = await camera();
          return (
            state.status === 200 && state.body.state === 'streaming' && state.body.framesPredicted > 0 && state.body
          );
        },
        what,
        90_000,
      );

    t.equal((await patch('served', { action: 'camera', url: source.url, fps: 2 })).status, 202);
    t.match(await applied(), { camera: source.url }, 'saved on the deployment');
    t.match(
      await streaming('frames predicted'),
      { url: source.url, fps: 2, latest: { results: Array } },
      "the live server reads it; its results at the service URL's /camera",
    );

    const before = await server.deploymentRouter.upstream(em(), id);
    t.equal((await patch('served', { action: 'replace', model: 'detector' })).status, 202);
    await eventually(
      async () => (await server.deploymentRouter.upstream(em(), id)).revisionId !== before.revisionId,
      'the next revision live',
      120_000,
    );
    t.match(
      await streaming('frames predicted by the next revision'),
      { url: source.url, fps: 2 },
      'the next revision was given the camera',
    );

    t.equal((await patch('served', { action: 'camera', url: null })).status, 202);
    t.notOk((await applied()).camera, 'removed from the deployment');
    t.match((await camera()).body, { state: 'off', url: null }, 'the server stopped reading it');
  });
});

t.test('idle at the default size: scaled to zero, woken by a request', async (t) => {
  await agent('idle-host', 'europe-west4');
  const id = await createDeployment('sleepy', 'europe-west4', { cpu: 1, memoryGi: 2 });
  await untilStatus('sleepy', 'ready');
  const first = await server.deploymentRouter.upstream(em(), id);
  await eventually(
    async () =>
      !(await fetch(`${first.url}/health`).then(
        () => true,
        () => false,
      )),
    'the idle server to stop',
    (IDLE_SECONDS + 30) * 1000,
  );
  t.equal((await read('sleepy')).status, 'ready', 'scaled to zero, it reads ready');
  const started = Date.now();
  const woken = await server.deploymentRouter.upstream(em(), id);
  t.comment(`cold start from zero: ${Date.now() - started} ms`);
  t.not(woken.revisionId, first.revisionId, 'a new revision');
  t.equal((await predictAt(woken.url, image, {}, woken.token)).status, 200);
});

t.test('a host killed: its deployment is restarted on the other host of the region', async (t) => {
  const doomed = await agent('doomed-host', 'us-east1');
  const id = await createDeployment('survivor', 'us-east1', { cpu: 2, memoryGi: 4 });
  await untilStatus('survivor', 'ready');
  const before = await server.deploymentRouter.upstream(em(), id);
  await agent('spare-host', 'us-east1');
  doomed.child.kill('SIGKILL');
  // Its orphaned server would keep answering: only the revision's new URL proves the restart.
  const after = await eventually(
    async () => {
      const upstream = await server.deploymentRouter.upstream(em(), id).catch(() => undefined);
      return upstream && upstream.url !== before.url && upstream;
    },
    'the restarted revision',
    120_000,
  );
  t.equal(after.revisionId, before.revisionId, 'the same revision, restarted');
  t.equal((await predictAt(after.url, image, {}, after.token)).status, 200);
});
