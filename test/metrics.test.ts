// Operators' metrics, against Debian's real Prometheus: it scrapes a real control plane (with its scrape token) and a
// real worker agent (its own metrics, turned on), reads every metric family both expose, and loads the appliance's
// alert rules (installer/monitoring/alerts.yml), whose queries return what the test made happen: a host with a GPU at
// 95 °C, then that host offline while a job waits for a GPU no host has, the job waiting 20 minutes, no backup ever.
// promtool checks the rules file; every metric the rules and the Grafana dashboard name is one the appliance serves.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import { query } from '../control-plane/src/db/sql.ts';
import { enrollAgent, freePort, runAgent } from './helpers/agent.ts';
import { eventually, queueCommand } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { WorkerClient, enrollHost } from './helpers/worker-client.ts';

const RULES = new URL('../installer/monitoring/alerts.yml', import.meta.url).pathname;
const DASHBOARD = new URL('../installer/monitoring/grafana-dashboard.json', import.meta.url).pathname;
const TOKEN = 'scrape-token-of-the-metrics-test-0123456789';

t.test('promtool checks the alert rules', async (t) => {
  const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', RULES]);
  t.match(stdout, /SUCCESS: 7 rules found/);
});

t.test('/metrics: the scrape token only; API keys never; 404 where no token is set', async (t) => {
  const { server, alice } = await startWorld(t, { METRICS_TOKEN: TOKEN });
  const scrape = (authorization?: string) =>
    fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} });
  t.equal((await scrape()).status, 401, 'no token');
  t.equal((await scrape(`Bearer ${alice}`)).status, 401, "an owner's API key");
  t.equal((await scrape(`Bearer ${TOKEN}x`)).status, 401, 'a wrong token');
  const answer = await scrape(`Bearer ${TOKEN}`);
  t.equal(answer.status, 200);
  t.match(answer.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.match(await answer.text(), /^vp_build_info\{version="[^"]+"\} 1$/m);
  const untokened = await startTestServer(t);
  t.equal((await fetch(`${untokened.url}/metrics`)).status, 404, 'off without METRICS_TOKEN');
});

t.test('Prometheus scrapes the appliance and an agent; the alert rules see what happened', async (t) => {
  const world = await startWorld(t, {
    METRICS_TOKEN: TOKEN,
    WORKER_HEARTBEAT_SECONDS: '1',
    HOST_LOST_GRACE_SECONDS: '3',
  });
  const { server, alice } = world;
  const dir = mkdtempSync(join(tmpdir(), 'vp-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // A real agent with its metrics on.
  const agentPort = await freePort();
  const { enrollmentToken } = await server.services().hosts.connect('real-agent');
  await enrollAgent(t, server.url, enrollmentToken, join(dir, 'agent.json'));
  runAgent(t, join(dir, 'agent.json'), {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(dir, 'agent-work'),
    VP_WORKER_METRICS_LISTEN: `127.0.0.1:${agentPort}`,
  });
  // A host with a GPU running hot, as its agent reports it.
  const gpuBox = await enrollHost(server, 'gpu-box');
  const { client } = await WorkerClient.welcomed(server, gpuBox.workerKey);
  await new Promise((resolve) => setTimeout(resolve, 1100)); // past the heartbeat write throttle
  client.send({
    type: 'heartbeat',
    at: new Date().toISOString(),
    load: {
      cpuPercent: 12,
      memoryUsedBytes: 2 ** 33,
      gpus: [{ index: 0, utilizationPercent: 97, memoryUsedMiB: 20_000, temperatureC: 95 }],
    },
  });
  client.beat(500);
  // A job for a GPU no host has: it waits.
  const waiting = await queueCommand(server, 'alice', { command: ['true'] }, { gpuType: 'h100-sxm', gpuCount: 1 });
  // Traffic: an epoch reported, a refused request.
  const started = await call<{ modelId: string }>(server, 'POST', '/api/webhooks/training/metrics', {
    key: alice,
    body: { event: 'training_started', project: 'alice/metrics', name: 'run', data: { epochs: 3 } },
  });
  await call(server, 'POST', '/api/webhooks/training/metrics', {
    key: alice,
    body: {
      event: 'epoch_end',
      modelId: started.body.modelId,
      data: { epoch: 0, metrics: { 'metrics/mAP50(B)': 0.1 } },
    },
  });
  t.equal((await call(server, 'GET', '/api/account/summary', { key: 'ul_not-a-key' })).status, 401);

  writeFileSync(join(dir, 'token'), TOKEN);
  const promPort = await freePort();
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ['${RULES}']
scrape_configs:
  - job_name: vp-control-plane
    authorization: { type: Bearer, credentials_file: '${join(dir, 'token')}' }
    static_configs: [{ targets: ['${new URL(server.url).host}'] }]
  - job_name: vp-worker
    static_configs: [{ targets: ['127.0.0.1:${agentPort}'] }]
`,
  );
  const prometheus = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let promLog = '';
  prometheus.stderr.on('data', (chunk) => (promLog += chunk));
  t.teardown(() => {
    prometheus.kill('SIGKILL');
  });
  const promApi = async <T>(path: string): Promise<T> => {
    const answer = (await (await fetch(`http://127.0.0.1:${promPort}${path}`)).json()) as { status: string; data: T };
    if (answer.status !== 'success') throw new Error(`${path}: ${JSON.stringify(answer)}`);
    return answer.data;
  };
  type Vector = Array<{ metric: Record<string, string>; value: [number, string] }>;
  const instant = (expr: string) =>
    promApi<{ result: Vector }>(`/api/v1/query?query=${encodeURIComponent(expr)}`).then((data) => data.result);

  await eventually(
    async () => (await instant('up == 1').catch(() => [])).length === 2,
    `both targets up (${promLog.slice(-500)})`,
    60_000,
  );
  await eventually(
    async () => (await instant('vp_gpu_temperature_celsius')).length === 1,
    'the hot GPU scraped',
    20_000,
  );

  t.test('every metric family both serve is in Prometheus', async (t) => {
    // The families with samples (a labelled family nothing has counted yet, such as Node's active requests by type,
    // has none to scrape).
    const families = (text: string) =>
      [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)]
        .map((match): [string, string] => [match[1]!, match[2]!])
        .filter(([name]) => new RegExp(`^${name}(_bucket|_count|_sum)?[{ ]`, 'm').test(text));
    const served = [
      ...families(
        await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
      ),
      ...families(await (await fetch(`http://127.0.0.1:${agentPort}/metrics`)).text()),
    ];
    const stored = new Set(await promApi<string[]>('/api/v1/label/__name__/values'));
    const missing = served
      .map(([name, type]) => (type === 'histogram' ? `${name}_bucket` : type === 'summary' ? `${name}_count` : name))
      .filter((name) => !stored.has(name));
    t.same(missing, [], `all ${served.length} families read`);
    t.ok(served.length >= 40, `${served.length} families`);
    const named = (text: string) => new Set([...text.matchAll(/\bvp_[a-z0-9_]+/g)].map((match) => match[0]));
    const known = new Set(served.map(([name]) => name));
    const base = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
    for (const [file, text] of [
      ['alerts.yml', readFileSync(RULES, 'utf8')],
      ['grafana-dashboard.json', readFileSync(DASHBOARD, 'utf8')],
    ] as const) {
      const unknown = [...named(text)].filter((name) => !known.has(name) && !known.has(base(name)));
      t.same(unknown, [], `${file} names only metrics the appliance serves`);
    }
    t.match(await instant('vp_worker_connected'), [{ value: [Number, '1'] }], "the agent's own metrics");
    t.match(await instant('vp_training_epochs_total'), [{ value: [Number, '1'] }], 'the epoch reported');
    t.match(await instant('vp_http_refused_total{reason="unauthorized"}'), [{ value: [Number, /^[1-9]/] }]);
  });

  const rules = async () =>
    (
      await promApi<{ groups: Array<{ rules: Array<{ name: string; query: string }> }> }>('/api/v1/rules')
    ).groups.flatMap((group) => group.rules);
  const ruleResult = async (name: string) => {
    const rule = (await rules()).find((candidate) => candidate.name === name);
    if (!rule) throw new Error(`no rule ${name}`);
    return instant(rule.query);
  };

  t.test('the hot GPU: VpGpuTooHot', async (t) => {
    t.match(await ruleResult('VpGpuTooHot'), [{ metric: { host: 'gpu-box', gpu: '0' }, value: [Number, '95'] }]);
    t.match(await instant('vp_gpu_utilization_ratio{host="gpu-box"}'), [{ value: [Number, '0.97'] }]);
  });

  t.test('the host offline while a job waits, the job waiting long, no backup', async (t) => {
    t.same(await ruleResult('VpHostOfflineWhileJobsWait'), [], 'every host up: nothing yet');
    client.ws.close();
    await client.closed;
    await eventually(
      async () => (await ruleResult('VpHostOfflineWhileJobsWait')).length > 0,
      'the host offline alert',
      30_000,
    );
    t.match(await ruleResult('VpHostOfflineWhileJobsWait'), [{ metric: { host: 'gpu-box' } }]);
    t.same(await ruleResult('VpJobsWaitingLong'), [], 'the job has waited seconds only');
    const em = server.orm.em.fork() as EntityManager;
    await query(em, `update jobs set created_at = now() - interval '20 minutes' where id = ?`, [waiting]);
    await eventually(async () => (await ruleResult('VpJobsWaitingLong')).length > 0, 'the wait alert', 30_000);
    t.match(await ruleResult('VpJobsWaitingLong'), [{ metric: { kind: 'host-command', gpu_type: 'h100-sxm' } }]);
    t.equal((await ruleResult('VpBackupTooOld')).length, 1, 'no backup ever made');
    for (const quiet of ['VpControlPlaneDown', 'VpDeploymentErrorRate'])
      t.same(await ruleResult(quiet), [], `${quiet}: nothing happened that it watches`);
    const names = (await rules()).map((rule) => rule.name).sort();
    t.equal(names.length, 7, `rules loaded: ${names.join(', ')}`);
  });
});
