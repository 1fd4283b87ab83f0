// A deployment's server as a hostile host makes it, against a real control plane. The host is a scripted agent
// (test/helpers/worker-client.ts) connecting from 127.0.0.2, another machine as the control plane sees it: it reports
// its service at an internal address of the control plane's machine (a service on 127.0.0.1 only, with a secret),
// which must never be requested; its own server (on 127.0.0.2) answers too much, or a byte now and then, which must
// cost the control plane bounded memory and end within DEPLOYMENT_TIMEOUT_SECONDS as 502 or 504. Behind a trusted
// proxy the agent's address is the last X-Forwarded-For entry, not one it wrote itself.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { ANSWER_MAX_BYTES, SERVICE_HOLD_BYTES } from '../control-plane/src/deployments/deployment-proxy.ts';
import { eventually } from './helpers/host-jobs.ts';
import { shapeImage } from './helpers/images.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call, startTestServer } from './helpers/server.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const TIMEOUT_SECONDS = 3;
const fixture = await trainedModel('detect');
/** Replicas share the appliance's secret (revisions' tokens are sealed under it). */
const APPLIANCE_SECRET = randomBytes(32).toString('hex');
const world = await startWorld(t, {
  DEPLOYMENT_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
  RATE_LIMIT_PREDICT: '1000',
  SIGNING_SECRET: APPLIANCE_SECRET,
});
const { server, alice } = world;
const em = () => server.orm.em.fork() as EntityManager;
const picture = (await shapeImage({ width: 64, height: 64 })).bytes;

await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, {
  project: 'vision',
  model: 'detector',
  task: 'detect',
  trainArgs: { imgsz: fixture.imgsz },
});
await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
await seedOnnxExport(server, model.id, fixture.onnx);

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void, host: string): Promise<number> {
  const http: Server = createServer(handler);
  await new Promise<void>((listening) => http.listen(0, host, listening));
  t.teardown(() => {
    http.closeAllConnections();
    http.close();
  });
  return (http.address() as AddressInfo).port;
}

const SECRET = 'internal-secret-5c1e';
/** A service of the control plane's own machine that only loopback 127.0.0.1 reaches: it answers anyone anything. */
const internalPort = await listen((req, res) => {
  req.resume();
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ healthy: true, images: [], secret: SECRET }));
}, '127.0.0.1');
/** A port nothing listens on (any more). */
const closedPort = await new Promise<number>((found) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as AddressInfo;
    probe.close(() => found(port));
  });
});

/** What the hostile host's own server (on 127.0.0.2) does with its next requests. */
let behaviour: (req: IncomingMessage, res: ServerResponse) => void = (req, res) => {
  req.resume();
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ healthy: true, images: [], host: 'own' }));
};
const ownPort = await listen((req, res) => behaviour(req, res), '127.0.0.2');

/** A host of `target` that runs inference servers, connecting from `localAddress`. */
async function inferenceHost(
  target: { url: string },
  name: string,
  region: string,
  options: { localAddress?: string; headers?: Record<string, string> },
): Promise<WorkerClient> {
  const { workerKey } = await enrollHost(server, name, undefined, region);
  const { client } = await WorkerClient.welcomed(target, workerKey, {}, options);
  client.beat(300);
  client.send({ type: 'capabilities', exporters: [], missingExporters: {}, services: ['inference'] });
  t.teardown(() => client.ws.close());
  await eventually(
    async () =>
      (await query(em(), `select 1 from hosts where name = ? and 'inference' = any(services)`, [name])).length > 0,
    `${name} to report its services`,
  );
  return client;
}

interface Served {
  id: string;
  jobId: string;
}

/** A deployment in `region` (2 CPU: never scaled to zero) whose host reports its service at `url`. */
async function deploy(host: WorkerClient, slug: string, region: string, url: string): Promise<Served> {
  const created = await call<{ id: string }>(server, 'POST', '/api/deployments/alice', {
    key: alice,
    body: { project: 'vision', model: 'detector', deployment: slug, name: slug, region, cpu: 2, memoryGi: 4 },
  });
  if (created.status !== 201) throw new Error(`create ${slug}: ${created.status} ${JSON.stringify(created.body)}`);
  const assigned = await host.nextOf('job.assign', 60_000);
  host.send({ type: 'job.accepted', jobId: assigned.jobId });
  host.send({ type: 'job.service', jobId: assigned.jobId, url });
  await eventually(
    async () =>
      (await call<{ deployment: { status: string } }>(server, 'GET', `/api/deployments/alice/${slug}`, { key: alice }))
        .body.deployment.status === 'ready',
    `${slug} ready`,
  );
  return { id: created.body.id, jobId: assigned.jobId };
}

const deploymentNamed = async (slug: string) =>
  (await query<{ id: string }>(em(), 'select id from deployments where slug = ?', [slug]))[0]!;
const storedUrl = async (id: string) =>
  (
    await query<{ url: string }>(
      em(),
      `select service_url as url from deployment_revisions where deployment_id = ? and state = 'live'`,
      [id],
    )
  )[0]?.url;

function form(): FormData {
  const body = new FormData();
  body.set('file', new Blob([picture], { type: 'image/png' }), 'picture.png');
  return body;
}

interface Answer {
  status: number;
  text: string;
  ms: number;
}

/** Every way a caller reaches a deployment's server, each answer read to its end. */
async function everyWay(slug: string, id: string): Promise<Record<string, Answer>> {
  const ways: Record<string, [string, RequestInit]> = {
    'service health': [`/svc/${id}/health`, {}],
    'service camera': [`/svc/${id}/camera`, {}],
    'service predict': [`/svc/${id}/predict`, { method: 'POST', body: form() }],
    'platform predict': [`/api/deployments/alice/${slug}/predict`, { method: 'POST', body: form() }],
    'platform health': [`/api/deployments/alice/${slug}/health`, {}],
  };
  const answers: Record<string, Answer> = {};
  for (const [way, [path, init]] of Object.entries(ways)) answers[way] = await request(path, init);
  return answers;
}

async function request(path: string, init: RequestInit = {}, target: { url: string } = server): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${target.url}${path}`, { ...init, headers: { authorization: `Bearer ${alice}` } });
  return { status: response.status, text: await response.text(), ms: performance.now() - started };
}

const hostile = await inferenceHost(server, 'hostile-host', 'us-central1', { localAddress: '127.0.0.2' });

t.test("a host's service is reached at its agent's address, never at one the agent names", async (t) => {
  const ssrf = await deploy(hostile, 'ssrf', 'us-central1', `http://127.0.0.1:${internalPort}`);
  t.equal(
    await storedUrl(ssrf.id),
    `http://127.0.0.2:${internalPort}`,
    'the reported port at the address the agent connects from',
  );
  const open = await everyWay('ssrf', ssrf.id);
  for (const [way, answer] of Object.entries(open))
    t.notMatch(answer.text, SECRET, `${way}: the internal service is not reached (${answer.status})`);
  t.equal(open['service predict']!.status, 502);
  t.match(JSON.parse(open['platform health']!.text), { healthy: false });
  t.notMatch(open['service predict']!.text, /ECONN|refused/i, 'how the connection failed is not said');

  // The same host reporting a port nothing listens on: the answers cannot tell the two apart.
  hostile.send({ type: 'job.service', jobId: ssrf.jobId, url: `http://127.0.0.1:${closedPort}` });
  await eventually(async () => (await storedUrl(ssrf.id))?.endsWith(`:${closedPort}`), 'the new port to be stored');
  const closed = await everyWay('ssrf', ssrf.id);
  const shape = (answers: Record<string, Answer>) =>
    Object.fromEntries(
      Object.entries(answers).map(([way, { status, text }]) => [way, [status, text.replace(/"latencyMs":[\d.]+/, '')]]),
    );
  t.same(shape(closed), shape(open), 'an open port and a closed one answer alike');
});

t.test('the host its agent names is ignored: its own server at the same port answers', async (t) => {
  const served = await deploy(hostile, 'own', 'us-central1', `http://203.0.113.7:${ownPort}`);
  t.equal(await storedUrl(served.id), `http://127.0.0.2:${ownPort}`);
  const health = await request(`/svc/${served.id}/health`);
  t.equal(health.status, 200);
  t.match(JSON.parse(health.text), { healthy: true, host: 'own' });
  t.match((await call(server, 'GET', '/api/deployments/alice/own/health', { key: alice })).body, {
    healthy: true,
    status: 200,
  });
});

/** Bytes a response body delivered before it ended or broke off, and whether it broke off. */
async function drain(response: Response): Promise<{ bytes: number; broken: boolean }> {
  let bytes = 0;
  try {
    for await (const chunk of response.body! as AsyncIterable<Uint8Array>) bytes += chunk.length;
    return { bytes, broken: false };
  } catch {
    return { bytes, broken: true };
  }
}

/** The highest resident memory of this process (the control plane's) above what it was, while `work` runs. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, growth: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

const MiB = 2 ** 20;

t.test(
  'an answer of 512 MiB: the platform predict 502, the service URL cut at the cap; memory stays bounded',
  async (t) => {
    const served = await deploymentNamed('own');
    const chunk = Buffer.alloc(MiB, 0x20);
    let written = 0;
    behaviour = (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      written = 0;
      const more = () => {
        while (written < 512 * MiB && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    const { result, growth } = await peakGrowth(async () => {
      const platform = await fetch(`${server.url}/api/deployments/alice/own/predict`, {
        method: 'POST',
        body: form(),
        headers: { authorization: `Bearer ${alice}` },
      });
      const platformAnswer =
        platform.status === 502 ? ((await platform.json()) as { error: string }) : await drain(platform);
      const direct = await fetch(`${server.url}/svc/${served.id}/camera`, {
        headers: { authorization: `Bearer ${alice}` },
      });
      return {
        platform: { status: platform.status, answer: platformAnswer },
        direct: { status: direct.status, ...(await drain(direct)) },
      };
    });
    t.equal(result.platform.status, 502, `the platform predict: ${JSON.stringify(result.platform.answer)}`);
    t.match(result.platform.answer, { error: `more than ${ANSWER_MAX_BYTES} bytes` });
    t.equal(result.direct.status, 200, 'the service URL had started streaming');
    t.ok(
      result.direct.broken && result.direct.bytes <= ANSWER_MAX_BYTES,
      `and its answer is cut at the cap (${result.direct.bytes} bytes)`,
    );
    t.ok(written < 128 * MiB, `the server was not read to its end (${written / MiB} MiB)`);
    t.ok(growth < 160 * MiB, `resident memory grew ${Math.round(growth / MiB)} MiB`);

    behaviour = (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1.5 * 1024 * MiB) });
      res.write('{');
    };
    const announced = await request(`/svc/${served.id}/predict`, { method: 'POST', body: form() });
    t.equal(announced.status, 502, 'an answer announced over the cap is refused before it is read');
    t.ok(announced.ms < 2000, `at once (${Math.round(announced.ms)} ms)`);
  },
);

t.test('a server that sends a byte now and then: 504 at DEPLOYMENT_TIMEOUT_SECONDS in all', async (t) => {
  const served = await deploymentNamed('own');
  const trickle = (first: number) => (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(Buffer.alloc(first, 0x20));
    const timer = setInterval(() => res.write(' '), 500);
    res.once('close', () => clearInterval(timer));
    setTimeout(() => res.end('{}'), 20_000).unref();
  };
  const bound = (TIMEOUT_SECONDS + 2) * 1000;
  behaviour = trickle(1);
  for (const [way, path, init] of [
    ['service predict', `/svc/${served.id}/predict`, { method: 'POST', body: form() }],
    ['platform predict', '/api/deployments/alice/own/predict', { method: 'POST', body: form() }],
    ['service health', `/svc/${served.id}/health`, {}],
  ] as const) {
    const answer = await request(path, init);
    t.equal(answer.status, 504, `${way}: ${answer.text}`);
    t.match((JSON.parse(answer.text) as { error: string }).error, /did not answer within 3 s/);
    t.ok(answer.ms < bound, `${way}: within the deadline (${Math.round(answer.ms)} ms)`);
  }

  // Past what the service URL holds, the answer is on its way: the deadline cuts it short.
  behaviour = trickle(SERVICE_HOLD_BYTES + 1);
  const started = performance.now();
  const streamed = await fetch(`${server.url}/svc/${served.id}/camera`, {
    headers: { authorization: `Bearer ${alice}` },
  });
  const read = await drain(streamed);
  const ms = performance.now() - started;
  t.equal(streamed.status, 200);
  t.ok(read.broken, 'the streamed answer breaks off');
  t.ok(ms < bound, `within the deadline (${Math.round(ms)} ms)`);
  await eventually(
    async () =>
      (
        await query<{ status: number }>(
          em(),
          `select status from deployment_requests where deployment_id = ? and path like '%/camera' order by id desc limit 1`,
          [served.id],
        )
      )[0]?.status === 504,
    'the cut answer to be recorded as 504',
  );
});

t.test(
  'a server that refuses its camera with a huge body: a few hundred bytes quoted, the rest not read',
  async (t) => {
    const chunk = Buffer.alloc(MiB, 0x61);
    let written = 0;
    behaviour = (req, res) => {
      req.resume();
      res.writeHead(400, { 'content-type': 'text/plain' });
      written = 0;
      const more = () => {
        while (written < 256 * MiB && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    t.equal(
      (
        await call(server, 'PATCH', '/api/deployments/alice/own', {
          key: alice,
          body: { action: 'camera', url: 'rtsp://127.0.0.1:8554/cam', fps: 1 },
        })
      ).status,
      202,
    );
    const deployment = await eventually(async () => {
      const { body } = await call<{ deployment: { cameraApplying: boolean; statusMessage?: string } }>(
        server,
        'GET',
        '/api/deployments/alice/own',
        { key: alice },
      );
      return !body.deployment.cameraApplying && body.deployment;
    }, 'the camera change to fail');
    t.match(deployment.statusMessage, /^The camera change failed: its server answered 400: a{300}$/);
    t.ok(written < 64 * MiB, `the refusal was not read to its end (${written / MiB} MiB written)`);
  },
);

t.test('behind a trusted proxy the agent is where the proxy says, not where the agent says', async (t) => {
  const replica = await startTestServer(t, {
    databaseUrl: server.databaseUrl,
    env: { TRUST_PROXY: 'true', LOG_LEVEL: 'silent', SIGNING_SECRET: APPLIANCE_SECRET },
  });
  // What a proxy in front of the replica sends on: the agent's own claim first, then the address it saw.
  const proxied = await inferenceHost(replica, 'proxied-host', 'europe-west4', {
    headers: { 'x-forwarded-for': '127.0.0.1, 127.0.0.2' },
  });
  const behind = await deploy(proxied, 'behind', 'europe-west4', `http://127.0.0.1:${internalPort}`);
  t.equal(await storedUrl(behind.id), `http://127.0.0.2:${internalPort}`);
  for (const [way, answer] of Object.entries(await everyWay('behind', behind.id)))
    t.notMatch(answer.text, SECRET, `${way}: the internal service is not reached`);
});
