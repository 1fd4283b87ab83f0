// A deployment's traffic against a real control plane and a real inference server (inference-server/src/main.ts on a
// trained ONNX model): predict through the platform and through the service URL (answers equal to model predict),
// who may call which, the platform's rate limits skipped by the service URL, a URL source fetched by the platform,
// health, the upstream's failures as 502/504 (a plain HTTP server stands in for a failing or hanging server), the
// metrics' percentiles against the recorded latencies, log paging, and the records written at shutdown. The host is
// a scripted agent (test/helpers/worker-client.ts) that reports the real server's URL as its agent would.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { eventually } from './helpers/host-jobs.ts';
import { startInferenceServer } from './helpers/inference-server.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call, startTestServer } from './helpers/server.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';
import { startWorld } from './helpers/world.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';

const fixture = await annotatingModel('detect');
const PREDICT_LIMIT = 16;
/** Replicas share the appliance's secret (revisions' tokens are sealed under it). */
const SECRET = randomBytes(32).toString('hex');
const world = await startWorld(t, {
  SIGNING_SECRET: SECRET,
  RATE_LIMIT_PREDICT: String(PREDICT_LIMIT),
  DEPLOYMENT_TIMEOUT_SECONDS: '2',
  OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8',
});
const { server, alice, bobby } = world;
const em = () => server.orm.em.fork() as EntityManager;
/** A fresh key of alice's per test that predicts through the platform: the Predict limit counts per key. */
const freshKey = async () => (await server.services().apiKeys.create('alice', 'fresh')).key;

const pictureDir = mkdtempSync(join(tmpdir(), 'vp-traffic-'));
t.teardown(() => rmSync(pictureDir, { recursive: true, force: true }));
// The pictures the fixture model was made for (as the inference server's own tests use).
const pictures = (await writeTestPictures(pictureDir)).map((written) => readFileSync(written.file));
const picture = pictures[0]!;

async function servable(project: string, slug: string): Promise<void> {
  const model = await createModel(world, alice, {
    project,
    model: slug,
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
  await seedOnnxExport(server, model.id, fixture.onnx);
}
await createProject(world, alice, { project: 'vision', name: 'vision' });
await servable('vision', 'detector');

const { workerKey } = await enrollHost(server, 'traffic-host', undefined, 'us-central1');
const { client: host } = await WorkerClient.welcomed(server, workerKey);
host.beat(300);
host.send({ type: 'capabilities', exporters: [], missingExporters: {}, services: ['inference'] });
t.teardown(() => host.ws.close());
await eventually(
  async () =>
    (await query(em(), `select 1 from hosts where name = 'traffic-host' and 'inference' = any(services)`)).length > 0,
  'the host to report that it runs inference servers',
);

interface Created {
  id: string;
  apiKey: string;
}

/** Creates a deployment (2 CPU: never scaled to zero) and serves its revision at what `serve` starts with its token. */
async function deploy(slug: string, serve: (token: string) => Promise<string>): Promise<Created> {
  const created = await call<Created>(server, 'POST', '/api/deployments/alice', {
    key: alice,
    body: {
      project: 'vision',
      model: 'detector',
      deployment: slug,
      name: slug,
      region: 'us-central1',
      cpu: 2,
      memoryGi: 4,
    },
  });
  if (created.status !== 201) throw new Error(`create ${slug}: ${created.status} ${JSON.stringify(created.body)}`);
  const assigned = await host.nextOf('job.assign');
  host.send({ type: 'job.accepted', jobId: assigned.jobId });
  host.send({ type: 'job.service', jobId: assigned.jobId, url: await serve(assigned.spec.env!.VP_SERVICE_TOKEN!) });
  await eventually(
    async () =>
      (await call<{ deployment: { status: string } }>(server, 'GET', `/api/deployments/alice/${slug}`, { key: alice }))
        .body.deployment.status === 'ready',
    `${slug} ready`,
  );
  return created.body;
}

const real = await deploy(
  'api',
  async (token) => (await startInferenceServer(t, fixture.onnx, { VP_SERVICE_TOKEN: token })).url,
);

/** What a stand-in upstream does with its next requests. */
let standIn: 'fail' | 'hang' = 'fail';
const hanging = new Set<import('node:http').ServerResponse>();
const stub: Server = createServer((req, res) => {
  req.resume();
  if (standIn === 'hang' && req.url !== '/health') return void hanging.add(res);
  res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the stand-in fails' }));
});
await new Promise<void>((listening) => stub.listen(0, '127.0.0.1', listening));
const closeStub = () =>
  new Promise<void>((closed) => {
    for (const res of hanging) res.destroy();
    stub.closeAllConnections();
    stub.close(() => closed());
  });
t.teardown(() => (stub.listening ? closeStub() : undefined));
const flaky = await deploy('flaky', async () => `http://127.0.0.1:${(stub.address() as AddressInfo).port}`);

function form(image: Uint8Array, fields: Record<string, string> = {}): FormData {
  const body = new FormData();
  body.set('file', new Blob([image], { type: 'image/png' }), 'picture.png');
  for (const [name, value] of Object.entries(fields)) body.set(name, value);
  return body;
}

async function post(path: string, key: string | undefined, body: FormData | string, contentType?: string) {
  const headers: Record<string, string> = {
    'user-agent': 'traffic-test/1',
    ...(contentType && { 'content-type': contentType }),
  };
  if (key) headers.authorization = `Bearer ${key}`;
  const started = performance.now();
  const response = await fetch(`${server.url}${path}`, { method: 'POST', body, headers });
  return {
    status: response.status,
    body: (await response.json()) as { error?: string; images?: Array<{ results: unknown[] }> },
    ms: performance.now() - started,
  };
}

const viaApi = (key: string | undefined, body: FormData | string, slug = 'api', contentType?: string) =>
  post(`/api/deployments/alice/${slug}/predict`, key, body, contentType);
const viaService = (key: string | undefined, body: FormData | string, id = real.id, contentType?: string) =>
  post(`/svc/${id}/predict`, key, body, contentType);
const recorded = async (id: string) =>
  (
    await query<{ n: number }>(em(), 'select count(*)::int as n from deployment_requests where deployment_id = ?', [id])
  )[0]!.n;

t.test('predict through the platform and through the service URL answers what model predict answers', async (t) => {
  const [key, referenceKey] = [await freshKey(), await freshKey()];
  let detections = 0;
  for (const image of pictures) {
    // A low threshold: the fixture was trained on other pictures of the same kind.
    const reference = await post(
      '/api/models/alice/vision/detector/predict',
      referenceKey,
      form(image, { conf: '0.01' }),
    );
    t.equal(reference.status, 200, JSON.stringify(reference.body));
    detections += reference.body.images![0]!.results.length;
    const proxied = await viaApi(key, form(image, { conf: '0.01' }));
    t.equal(proxied.status, 200, JSON.stringify(proxied.body));
    t.same(
      proxied.body.images![0]!.results,
      reference.body.images![0]!.results,
      'through the platform: the same predictions',
    );
    const direct = await viaService(alice, form(image, { conf: '0.01' }));
    t.equal(direct.status, 200, JSON.stringify(direct.body));
    t.same(
      direct.body.images![0]!.results,
      reference.body.images![0]!.results,
      'through the service URL: the same predictions',
    );
  }
  t.ok(detections > 0, `the pictures have detections (${detections})`);
  const normalized = await viaApi(
    key,
    form(pictures.find(Boolean)!, { normalize: 'true', decimals: '2', conf: '0.01' }),
  );
  const boxes = (normalized.body.images![0]!.results as Array<{ box: { x2: number } }>).map((row) => row.box.x2);
  t.ok(
    boxes.every((x2) => x2 <= 1 && Math.round(x2 * 100) === x2 * 100),
    'parameters reach the server (normalize, decimals)',
  );
});

t.test(
  'a URL source is fetched by the platform; the service URL leaves it to the server, which refuses it',
  async (t) => {
    const images = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(picture));
    await new Promise<void>((listening) => images.listen(0, '127.0.0.1', listening));
    t.teardown(() => images.close());
    const source = `http://127.0.0.1:${(images.address() as AddressInfo).port}/picture.png`;
    const key = await freshKey();
    const byFile = await viaApi(key, form(picture));
    const bySource = await viaApi(key, JSON.stringify({ source }), 'api', 'application/json');
    t.equal(bySource.status, 200, JSON.stringify(bySource.body));
    t.same(bySource.body.images![0]!.results, byFile.body.images![0]!.results);
    const direct = await viaService(alice, JSON.stringify({ source }), real.id, 'application/json');
    t.equal(direct.status, 400);
    t.match(direct.body.error, /source URLs are not fetched/);
  },
);

t.test('who may call: owner keys and the deployment key; strangers 404; the deployment key nowhere else', async (t) => {
  t.equal(
    (await viaService(real.apiKey, form(picture))).status,
    200,
    "the deployment's own key reaches its service URL",
  );
  t.equal((await viaApi(real.apiKey, form(picture))).status, 200, 'and its predict through the platform');
  t.equal((await viaService(real.apiKey, form(picture), flaky.id)).status, 404, 'not another deployment');
  t.equal((await viaApi(real.apiKey, form(picture), 'flaky')).status, 403, 'not through the platform either');
  t.equal(
    (await call(server, 'GET', '/api/deployments/alice', { key: real.apiKey })).status,
    403,
    'nor the rest of the API',
  );
  t.equal((await viaService(bobby, form(picture))).status, 404, "another workspace's key: no such deployment");
  t.equal((await viaApi(bobby, form(picture))).status, 404, 'through the platform too (a private model)');
  t.equal((await viaService(undefined, form(picture))).status, 401, 'the service URL needs a key');
  t.equal((await viaService(alice, form(picture), 'f'.repeat(24))).status, 404);
  const wrongMethod = await fetch(`${server.url}/svc/${real.id}/predict`, {
    headers: { authorization: `Bearer ${alice}` },
  });
  t.equal(wrongMethod.status, 405);
  for (const path of ['metrics', 'logs', 'health'])
    t.equal(
      (await call(server, 'GET', `/api/deployments/alice/api/${path}`, { key: bobby })).status,
      404,
      `a stranger's ${path}: 404`,
    );
});

t.test('the service URL is outside the Predict rate limit; the platform predict is not', async (t) => {
  const key = await freshKey();
  const direct = await Promise.all(Array.from({ length: PREDICT_LIMIT + 3 }, () => viaService(key, form(picture))));
  t.same(
    direct.map((answer) => answer.status),
    direct.map(() => 200),
    'every service URL call answered',
  );
  const statuses: number[] = [];
  for (let i = 0; i < PREDICT_LIMIT + 1; i += 1) statuses.push((await viaApi(key, form(picture))).status);
  t.same(
    statuses,
    [...Array.from({ length: PREDICT_LIMIT }, () => 200), 429],
    'the platform predict counts against the Predict category',
  );
});

t.test("the server's answers and failures: 4xx passed through, 5xx and unreachable 502, no answer 504", async (t) => {
  const key = await freshKey();
  const bad = await viaService(alice, form(picture, { imgsz: '5000' }));
  t.equal(bad.status, 400);
  t.match(bad.body.error, /imgsz/, "the server's own 400 and message");
  t.equal(
    (await viaApi(key, form(picture, { conf: '7' }))).status,
    400,
    'the platform checks parameters before sending',
  );
  standIn = 'fail';
  const failed = await viaApi(key, form(picture), 'flaky');
  t.equal(failed.status, 502);
  t.match(failed.body.error, /failed \(500\): the stand-in fails/);
  standIn = 'hang';
  const slow = await viaService(alice, form(picture), flaky.id);
  t.equal(slow.status, 504);
  t.match(slow.body.error, /did not answer within 2 s/);
  t.ok(slow.ms < 6000, 'the timeout is DEPLOYMENT_TIMEOUT_SECONDS');
  const health = await call<{ healthy: boolean }>(server, 'GET', '/api/deployments/alice/flaky/health', { key: alice });
  t.match(health.body, { healthy: false, status: 500 }, "an unhealthy server's health");
  await closeStub();
  const unreachable = await viaApi(key, form(picture), 'flaky');
  t.equal(unreachable.status, 502);
  t.match(unreachable.body.error, /could not be reached; if it was just replaced or woken, try again/);
});

t.test('health: the live server answers; not healthy where nothing serves', async (t) => {
  const health = await call<{ healthy: boolean; status: number; latencyMs: number }>(
    server,
    'GET',
    '/api/deployments/alice/api/health',
    { key: alice },
  );
  t.equal(health.status, 200);
  t.match(health.body, { healthy: true, status: 200 });
  t.ok(health.body.latencyMs > 0);
  const direct = await fetch(`${server.url}/svc/${real.id}/health`, {
    headers: { authorization: `Bearer ${real.apiKey}` },
  });
  t.match(await direct.json(), { healthy: true, task: 'detect' }, "the service URL's health is the server's own");
});

/** PostgreSQL's percentile_cont: linear interpolation between the closest ranks. */
function percentile(sorted: number[], fraction: number): number {
  const rank = fraction * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

t.test('metrics: totals, errors and latency percentiles of the recorded requests', async (t) => {
  const before = await recorded(real.id);
  const client: number[] = [];
  for (const image of [...pictures, ...pictures, ...pictures]) client.push((await viaService(alice, form(image))).ms);
  await eventually(async () => (await recorded(real.id)) >= before + client.length, 'the requests to be recorded');
  const rows = await query<{
    method: string;
    latency_ms: number;
    status: number;
    via: string;
    user_agent: string;
    request_bytes: string;
    response_bytes: string;
  }>(
    em(),
    'select method, latency_ms, status, via, user_agent, request_bytes, response_bytes from deployment_requests where deployment_id = ? order by id',
    [real.id],
  );
  const latest = rows.slice(-client.length);
  t.ok(
    latest.every((row) => row.latency_ms > 0 && row.latency_ms <= Math.max(...client) + 1),
    'the recorded latencies are within what the caller saw',
  );
  // The platform's own health checks (GET, its user agent) may be recorded among them.
  const predicts = latest.filter((row) => row.method === 'POST');
  t.ok(
    predicts.length > 0 && predicts.every((row) => row.via === 'service' && row.user_agent === 'traffic-test/1'),
    'via and user agent',
  );
  // A GET (a health check recorded meanwhile) has no body; every predict has both sizes.
  const sizeless = latest.filter(
    (row) => !((row.method === 'GET' || Number(row.request_bytes) > 0) && Number(row.response_bytes) > 0),
  );
  t.same(sizeless, [], 'every request and response has its size recorded');
  t.ok(
    rows.some((row) => row.via === 'proxy'),
    'platform predicts are recorded too',
  );

  const latencies = rows.map((row) => row.latency_ms).sort((a, b) => a - b);
  const errors = rows.filter((row) => row.status >= 500).length;
  const metrics = await call<{
    summary: Record<string, number>;
    timeSeries: Record<string, Array<{ timestamp: string; value: number }>>;
    timeRange: { start: string; end: string };
  }>(server, 'GET', '/api/deployments/alice/api/metrics?range=1h', { key: alice });
  t.equal(metrics.status, 200, JSON.stringify(metrics.body));
  const { summary, timeSeries } = metrics.body;
  t.equal(summary.totalRequests, rows.length);
  t.equal(summary.errorCount, errors);
  const near = (actual: number, expected: number, what: string) =>
    t.ok(Math.abs(actual - expected) <= 0.01, `${what}: ${actual} ≈ ${expected}`);
  near(summary.avgLatencyMs!, latencies.reduce((sum, value) => sum + value, 0) / latencies.length, 'average');
  near(summary.p50LatencyMs!, percentile(latencies, 0.5), 'p50');
  near(summary.p95LatencyMs!, percentile(latencies, 0.95), 'p95');
  near(summary.p99LatencyMs!, percentile(latencies, 0.99), 'p99');
  t.ok(timeSeries.requests!.length >= 60 && timeSeries.requests!.length <= 61, 'a bucket per minute');
  t.equal(
    timeSeries.requests!.reduce((sum, point) => sum + point.value, 0),
    rows.length,
    'the buckets hold every request',
  );
  t.same(timeSeries.cpuUtilization, [], 'CPU is not reported by the agents');
  t.ok(timeSeries.instanceCount!.at(-1)!.value === 1, 'one server serves now');

  const overview = await call<Record<string, Record<string, unknown>>>(
    server,
    'GET',
    '/api/deployments/alice/api/metrics?view=overview&range=6h',
    { key: alice },
  );
  t.same(Object.keys(overview.body.timeSeries!).sort(), ['errors', 'latencyP95', 'requests']);
  t.match(overview.body.summary, { totalRequests: rows.length, p95LatencyMs: summary.p95LatencyMs });
  const sparkline = await call<{ requests24h: number[]; totalRequests: number }>(
    server,
    'GET',
    '/api/deployments/alice/api/metrics?sparkline=true',
    { key: alice },
  );
  t.equal(sparkline.body.totalRequests, rows.length);
  t.equal(
    sparkline.body.requests24h.reduce((sum, value) => sum + value, 0),
    rows.length,
  );
  const flakyMetrics = await call<{ summary: { errorCount: number; errorRate: number } }>(
    server,
    'GET',
    '/api/deployments/alice/flaky/metrics',
    { key: alice },
  );
  t.ok(
    flakyMetrics.body.summary.errorCount >= 3 && flakyMetrics.body.summary.errorRate === 1,
    "the stand-in's 500, 504 and 502 are errors",
  );
  t.equal((await call(server, 'GET', '/api/deployments/alice/api/metrics?range=2d', { key: alice })).status, 400);
});

t.test('metrics and logs read right after requests include them: nothing waits for the next batch write', async (t) => {
  const total = async () =>
    (
      await call<{ summary: { totalRequests: number } }>(server, 'GET', '/api/deployments/alice/api/metrics?range=1h', {
        key: alice,
      })
    ).body.summary.totalRequests;
  const before = await total();
  for (const image of pictures) t.equal((await viaService(alice, form(image))).status, 200);
  t.ok((await total()) >= before + pictures.length, `the ${pictures.length} requests just served are counted at once`);
  const mark = Date.now();
  for (const image of pictures) t.equal((await viaService(alice, form(image))).status, 200);
  const page = await call<LogPage>(server, 'GET', '/api/deployments/alice/api/logs?limit=50', { key: alice });
  const served = page.body.entries.filter(
    (entry) => entry.httpRequest?.method === 'POST' && Date.parse(entry.timestamp) >= mark,
  );
  t.equal(served.length, pictures.length, 'and logged at once');
});

interface LogPage {
  entries: Array<{
    timestamp: string;
    severity: string;
    message: string;
    httpRequest?: { method: string; url: string; status: number };
  }>;
  nextPageToken?: string;
}

const logs = (slug: string, query: string) =>
  call<LogPage>(server, 'GET', `/api/deployments/alice/${slug}/logs?${query}`, { key: alice });

t.test('logs: every event and request once, newest first, across pages that new entries do not shift', async (t) => {
  const first = await logs('api', 'limit=200');
  t.equal(first.status, 200, JSON.stringify(first.body));
  const everything = first.body.entries;
  const total = (
    await query<{ n: number }>(
      em(),
      `select (select count(*) from deployment_events where deployment_id = ?) + (select count(*) from deployment_requests where deployment_id = ?) as n`,
      [real.id, real.id],
    )
  )[0]!.n;
  t.equal(everything.length, Math.min(200, Number(total)));
  t.ok(
    everything.some((entry) => entry.httpRequest?.url === `/svc/${real.id}/predict`) &&
      everything.some((entry) => !entry.httpRequest),
    'requests and events',
  );

  const seen: string[] = [];
  let page = await logs('api', 'limit=7');
  seen.push(...page.body.entries.map((entry) => JSON.stringify(entry)));
  // Entries added while paging come before the first page, never inside the pages still to come.
  const before = await recorded(real.id);
  await viaService(alice, form(picture));
  await eventually(async () => (await recorded(real.id)) >= before + 1, 'the new request to be recorded');
  while (page.body.nextPageToken) {
    page = await logs('api', `limit=7&pageToken=${encodeURIComponent(page.body.nextPageToken)}`);
    t.equal(page.status, 200);
    seen.push(...page.body.entries.map((entry) => JSON.stringify(entry)));
  }
  t.equal(new Set(seen).size, seen.length, 'no entry twice');
  t.same(
    seen,
    everything.map((entry) => JSON.stringify(entry)),
    'the pages are exactly the log as it was, newest first',
  );
  const times = seen.map((entry) => Date.parse((JSON.parse(entry) as { timestamp: string }).timestamp));
  t.ok(
    times.every((time, index) => index === 0 || time <= times[index - 1]!),
    'newest first',
  );
});

t.test('logs: severity filter, bad tokens and limits', async (t) => {
  const errors = await logs('flaky', 'severity=ERROR');
  t.ok(
    errors.body.entries.length >= 3 &&
      errors.body.entries.every((entry) => entry.severity === 'ERROR' && entry.httpRequest!.status >= 500),
    'only the failed requests',
  );
  const mixed = await logs('flaky', 'severity=error,INFO');
  t.ok(
    mixed.body.entries.some((entry) => entry.severity === 'INFO') &&
      mixed.body.entries.length > errors.body.entries.length,
    'several severities, any case',
  );
  t.equal((await logs('api', 'severity=LOUD')).status, 400);
  t.equal((await logs('api', 'pageToken=garbage')).status, 400);
  const other = (await logs('flaky', 'limit=1')).body.nextPageToken!;
  const misused = await logs('api', `pageToken=${encodeURIComponent(other)}`);
  t.equal(misused.status, 400, "another deployment's token");
  t.equal((await logs('api', 'limit=201')).status, 400);
  const all = (await logs('api', 'limit=200')).body.entries.length;
  t.equal((await logs('api', '')).body.entries.length, Math.min(50, all), 'default limit 50');
});

t.test('logs: search keeps the entries whose text holds it, any case, events and requests, paged alike', async (t) => {
  const everything = (await logs('flaky', 'limit=200')).body.entries;
  const matching = (text: string) =>
    everything.filter((entry) =>
      (entry.httpRequest
        ? `${entry.httpRequest.method} ${entry.httpRequest.url} ${entry.httpRequest.status}`
        : entry.message
      )
        .toLowerCase()
        .includes(text.toLowerCase()),
    );
  for (const text of ['PREDICT 5', 'ready', '%', 'no-such-text']) {
    const found = await logs('flaky', `limit=200&search=${encodeURIComponent(text)}`);
    t.equal(found.status, 200);
    t.same(found.body.entries, matching(text), `search "${text}": exactly the entries holding it, in order`);
  }
  t.ok(matching('PREDICT 5').length >= 3 && matching('ready').length >= 1, 'requests and events were searched');
  const failed = matching('predict 5');
  const paged: LogPage['entries'] = [];
  let page = await logs('flaky', 'limit=2&search=predict%205');
  paged.push(...page.body.entries);
  while (page.body.nextPageToken) {
    page = await logs('flaky', `limit=2&search=predict%205&pageToken=${encodeURIComponent(page.body.nextPageToken)}`);
    paged.push(...page.body.entries);
  }
  t.same(paged, failed, 'a search pages like the whole log');
  const failedOnly = await logs('flaky', 'limit=200&severity=ERROR&search=predict');
  t.same(
    failedOnly.body.entries,
    matching('predict').filter((entry) => entry.severity === 'ERROR'),
    'with a severity filter too',
  );
  t.equal((await logs('flaky', `search=${'x'.repeat(201)}`)).status, 400, 'a search of over 200 characters');
});

t.test('the requests answered before a shutdown are recorded', async (t) => {
  const second = await startTestServer(t, { databaseUrl: server.databaseUrl, env: { SIGNING_SECRET: SECRET } });
  const before = await recorded(real.id);
  const answers = await Promise.all(
    Array.from(
      { length: 4 },
      async () =>
        (
          await fetch(`${second.url}/svc/${real.id}/predict`, {
            method: 'POST',
            body: form(picture),
            headers: { authorization: `Bearer ${alice}` },
          })
        ).status,
    ),
  );
  t.same(answers, [200, 200, 200, 200]);
  await second.close();
  t.equal(await recorded(real.id), before + 4, 'written by close(), before the next flush was due');
});

t.test('a deployment that is stopped answers why', async (t) => {
  await call(server, 'PATCH', '/api/deployments/alice/flaky', { key: alice, body: { action: 'stop' } });
  const cancel = await host.nextOf('job.cancel');
  host.send({ type: 'job.finished', jobId: cancel.jobId, outcome: 'cancelled', exitCode: 143 });
  await eventually(
    async () =>
      (await call<{ deployment: { status: string } }>(server, 'GET', '/api/deployments/alice/flaky', { key: alice }))
        .body.deployment.status === 'stopped',
    'flaky stopped',
  );
  const health = await call<{ healthy: boolean; error: string }>(server, 'GET', '/api/deployments/alice/flaky/health', {
    key: alice,
  });
  t.match(health.body, { healthy: false, error: /stopped/ });
  const predicted = await viaService(alice, form(picture), flaky.id);
  t.equal(predicted.status, 503);
  t.match(predicted.body.error, /stopped/);
});
