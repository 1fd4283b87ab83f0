// The offline install, for real: installer/bundle/build-bundle.sh builds two bundles (the second from a copy of the
// sources with one more migration). Disposable containers on a Docker network with no way out (--internal) play an
// air-gapped site: the appliance host (the local Debian base image, no systemd) installs the first bundle with its
// install.sh, and again; a GPU host (the trainer image: its Python environment, no GPU) installs the worker agent from
// the bundle's worker distribution, enrolls, and trains a model. The appliance upgrades to the second bundle (the agent,
// one version behind, still trains), the agent upgrades from the second bundle, the appliance rolls back; a backup
// of it restores into a third container's new install, which answers the same as the first.
import { createHash } from 'node:crypto';
import { mkdirSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { answersByPath } from './helpers/answers.ts';
import { eventually } from './helpers/host-jobs.ts';
import { runProgram, type Run } from './helpers/run-node.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset } from './helpers/training-data.ts';
import { ensureConsoleBuilt } from '../control-plane/src/console/console-build.ts';

// Two bundle builds (cold on a fresh machine), three installs, two trainings: minutes, more on a busy machine.
t.setTimeout(15 * 60_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORK = join(ROOT, '.cache', 'install-test');
const BUNDLES = join(WORK, 'bundles');
const [FIRST, SECOND] = ['1.0.0-test.1', '1.0.0-test.2'];
const EXTRA_MIGRATION = 'Migration20991231000000_install_test';
const NETWORK = `vp-install-net-${process.pid}`;
const APPLIANCE = `vp-install-appliance-${process.pid}`;
const GPU_HOST = `vp-install-gpu-${process.pid}`;
const RESTORED = `vp-install-restored-${process.pid}`;
const TRAINER_IMAGE = 'vp/trainer:latest';
const KEY_FILE = '/var/lib/vision-appliance/initial-api-key';

async function ok(run: Promise<Run>, what: string): Promise<string> {
  const result = await run;
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

const bash = (script: string) => runProgram('bash', ['-c', script]);
const exec = (container: string, ...args: string[]) => runProgram('docker', ['exec', container, ...args]);
const inContainer = (...args: string[]) => exec(APPLIANCE, ...args);

/** Builds vision-appliance-<version>.tar from the sources at `source` (with the checkout's caches); how long it took. */
async function buildBundle(source: string, version: string): Promise<number> {
  const started = Date.now();
  const script = join(source, 'installer/bundle/build-bundle.sh');
  const path = await ok(
    runProgram(script, ['--version', version, '--out', BUNDLES], {
      VP_BUNDLE_CACHE: join(ROOT, '.cache', 'bundle'),
      VP_MODELS_CACHE: join(ROOT, '.cache', 'models'),
    }),
    `build-bundle ${version}`,
  );
  if (path.trim() !== join(BUNDLES, `vision-appliance-${version}.tar`)) throw new Error(`build-bundle printed ${path}`);
  return Date.now() - started;
}

/**
 * The checkout's sources (what build-bundle.sh packs) with one more migration, which adds and drops a table; its
 * node_modules and trainer venv (the models' build) are the checkout's.
 */
async function sourcesWithExtraMigration(): Promise<string> {
  await ensureConsoleBuilt({ info() {}, warn() {} }); // the bundle ships the console built, as build-bundle.sh does
  const copy = join(WORK, 'source-with-migration');
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(copy, { recursive: true });
  await ok(
    bash(`cd "${ROOT}" && { git ls-files -z --cached --others --exclude-standard -- config protocol inference inference-server control-plane worker-agent installer console package.json package-lock.json .npmrc LICENSE NOTICE README.md; find console/dist -type f -print0; } |
      xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\\0" "$f"; done' sh | tar -c --null -T - | tar -x -C "${copy}"`),
    'copy the sources',
  );
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  symlinkSync(join(ROOT, '.venv-trainer'), join(copy, '.venv-trainer'));
  const migrations = join(copy, 'control-plane/src/db/migrations');
  writeFileSync(
    join(migrations, `${EXTRA_MIGRATION}.ts`),
    `import { Migration } from '@mikro-orm/migrations';
export class ${EXTRA_MIGRATION} extends Migration {
  override name = '${EXTRA_MIGRATION}';
  override up(): void { this.addSql('create table "install_test" ("id" int primary key);'); }
  override down(): void { this.addSql('drop table "install_test";'); }
}
`,
  );
  const index = readFileSync(join(migrations, 'index.ts'), 'utf8')
    .replace(/^/, `import { ${EXTRA_MIGRATION} } from './${EXTRA_MIGRATION}.ts';\n`)
    .replace(/\n\];\s*$/, `\n  { name: '${EXTRA_MIGRATION}', class: ${EXTRA_MIGRATION} },\n];\n`);
  writeFileSync(join(migrations, 'index.ts'), index);
  return copy;
}

async function baseImage(): Promise<string> {
  const images = await ok(
    runProgram('docker', [
      'images',
      '--format',
      '{{.Repository}}:{{.Tag}}',
      '--filter',
      'reference=vp-inference-base:*',
    ]),
    'docker images',
  );
  const image = images.split('\n')[0];
  if (!image)
    throw new Error(
      'no vp-inference-base:* image: run installer/inference/build-inference-image.sh as root (.ci/run does)',
    );
  return image;
}

/** Starts a container on the site's network (bundles mounted read-only at /bundles); its IP address. */
async function startContainer(name: string, image: string): Promise<string> {
  await ok(
    runProgram('docker', [
      'run',
      '-d',
      '--init',
      '--network',
      NETWORK,
      '--name',
      name,
      '-v',
      `${BUNDLES}:/bundles:ro`,
      image,
      'sleep',
      'infinity',
    ]),
    `docker run ${name}`,
  );
  return (
    await ok(
      runProgram('docker', ['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', name]),
      'docker inspect',
    )
  ).trim();
}

const unpacked = new Set<string>();
/** Unpacks a bundle (or the members named) under /root of a container, once. */
async function unpack(container: string, version: string, ...members: string[]): Promise<void> {
  const key = `${container} ${version} ${members.join(' ')}`;
  if (unpacked.has(key)) return;
  await ok(
    exec(container, 'tar', '-xf', `/bundles/vision-appliance-${version}.tar`, '-C', '/root', ...members),
    `unpack ${version} in ${container}`,
  );
  unpacked.add(key);
}
/** Another program on the API's port (the base image's own node), its pid in /tmp/busy.pid once it listens. */
const BUSY_PORT =
  "require('node:net').createServer().listen(3000, () => require('node:fs').writeFileSync('/tmp/busy.pid', String(process.pid)))";

/** Runs the install.sh of a bundle in a container, unpacked there first if need be; its output and how long it took. */
async function install(container: string, version: string, ...args: string[]): Promise<{ output: string; ms: number }> {
  const started = Date.now();
  await unpack(container, version);
  const output = await ok(
    exec(container, `/root/vision-appliance-${version}/install.sh`, ...args),
    `install.sh ${version} ${args.join(' ')}`,
  );
  return { output, ms: Date.now() - started };
}

/** What a GPU host's operator does: the bundle's worker distribution unpacked there, its install-worker.sh run. */
async function installWorker(version: string, server: string, ...args: string[]): Promise<string> {
  const dist = `vp-worker-${version}`;
  await unpack(GPU_HOST, version, `vision-appliance-${version}/worker`);
  await ok(
    exec(GPU_HOST, 'tar', '-xzf', `/root/vision-appliance-${version}/worker/${dist}-linux-x64.tar.gz`, '-C', '/root'),
    'unpack the worker distribution',
  );
  return ok(
    exec(
      GPU_HOST,
      `/root/${dist}/install-worker.sh`,
      '--server',
      server,
      '--runtime',
      'process',
      '--no-systemd',
      ...args,
    ),
    `install-worker.sh ${version}`,
  );
}

/** The agent as install-worker.sh says to start it where systemd does not run (as its user): its config names the trainer's Python. */
async function startAgent(): Promise<void> {
  const run =
    'echo $$ >/tmp/agent.pid; exec vp-worker run --config /etc/vp-worker/config.json >>/var/lib/vp-worker/agent.log 2>&1';
  await ok(runProgram('docker', ['exec', '-d', '-u', 'vp-worker', GPU_HOST, 'sh', '-c', run]), 'start the agent');
}
const stopAgent = () =>
  ok(
    exec(
      GPU_HOST,
      'sh',
      '-c',
      'pid=$(cat /tmp/agent.pid); kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done',
    ),
    'stop the agent',
  );
const agentLog = async () => (await exec(GPU_HOST, 'tail', '-n', '40', '/var/lib/vp-worker/agent.log')).stdout;

/** Polls the API gently: it allows 100 ordinary requests a minute per key. */
const POLL_MS = 1000;
const KEPT = { status: 200, body: { project: { name: 'Kept' } } };
const ready = async (url: string) => (await fetch(`${url}/api/ready`).catch(() => null))?.ok === true;
const seconds = (ms: number) => (ms / 1000).toFixed(1);
const sha256 = (bytes: ArrayBuffer) => createHash('sha256').update(Buffer.from(bytes)).digest('hex');

interface HostView {
  name: string;
  state: string;
  agentVersion: string | null;
  agentOutdated: boolean;
}
async function gpuHost(server: { url: string }, key: string): Promise<HostView | undefined> {
  const listed = await call<{ hosts: HostView[] }>(server, 'GET', '/api/hosts', { key });
  if (listed.status !== 200) throw new Error(`GET /api/hosts: ${listed.status} ${JSON.stringify(listed.body)}`);
  return listed.body.hosts.find((host) => host.name === 'gpu-1');
}

/** Trains a new model of the project `detector` for one epoch on the GPU host (a CPU here): the job's final state. */
async function train(t: Test, server: { url: string }, key: string, model: string): Promise<Record<string, unknown>> {
  const created = await call<{ id: string }>(server, 'POST', '/api/models', {
    key,
    body: { project: 'detector', model },
  });
  if (created.status !== 201) throw new Error(`create model: ${created.status} ${JSON.stringify(created.body)}`);
  const trainArgs = {
    model: 'yolo11n.yaml',
    data: 'ul://admin/datasets/shapes',
    epochs: 1,
    imgsz: 64,
    batch: 4,
    workers: 0,
    plots: false,
  };
  const started = await call(server, 'POST', '/api/training/start', {
    key,
    body: { modelId: created.body.id, trainArgs, gpuType: 'cpu' },
  });
  if (started.status !== 200) throw new Error(`training start: ${started.status} ${JSON.stringify(started.body)}`);
  const job = await eventually(
    async () => {
      const view = (
        await call<{ job: { status: string } | null }>(server, 'GET', `/api/models/admin/detector/${model}/training`, {
          key,
        })
      ).body.job;
      return (view && ['completed', 'failed', 'cancelled'].includes(view.status) && view) || undefined;
    },
    `training ${model}`,
    300_000,
    POLL_MS,
  ).catch(async (error: Error) => {
    t.comment(`the agent's log:\n${await agentLog()}`);
    throw error;
  });
  if (job.status !== 'completed')
    t.comment(`training ${model}: ${JSON.stringify(job)}\nthe agent's log:\n${await agentLog()}`);
  return job as Record<string, unknown>;
}

/**
 * The answers of a few GETs (projects, datasets, images, models, training), each signed URL reduced to its path
 * (two installs differ in address, secret and expiry), and the SHA-256 of what each signed URL serves.
 */
async function answers(
  server: { url: string },
  key: string,
  paths: string[],
): Promise<{ bodies: Record<string, unknown>; served: Record<string, string> }> {
  const urls = new Map<string, string>();
  const bodies = await answersByPath(
    server,
    paths.map((path) => [key, path]),
    urls,
  );
  const served: Record<string, string> = {};
  for (const [path, url] of urls) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
    served[path] = sha256(await response.arrayBuffer());
  }
  return { bodies, served };
}

t.test('an air-gapped site: install, a GPU host, training, upgrade, rollback, backup and restore', async (t) => {
  const image = await baseImage();
  await ok(
    runProgram('docker', ['image', 'inspect', TRAINER_IMAGE]),
    `${TRAINER_IMAGE} (installer/trainer/build-trainer-image.sh; .ci/run builds it)`,
  );
  mkdirSync(BUNDLES, { recursive: true });
  const firstBuild = await buildBundle(ROOT, FIRST);
  const secondBuild = await buildBundle(await sourcesWithExtraMigration(), SECOND);
  const size = (await ok(bash(`stat -c %s "${BUNDLES}/vision-appliance-${FIRST}.tar"`), 'stat')).trim();
  t.comment(
    `bundles built in ${seconds(firstBuild)} s and ${seconds(secondBuild)} s (cached by content); ${Math.round(Number(size) / 2 ** 20)} MiB without the trainer`,
  );

  await ok(runProgram('docker', ['network', 'create', '--internal', NETWORK]), 'docker network create');
  t.teardown(() =>
    bash(`docker rm -f ${APPLIANCE} ${GPU_HOST} ${RESTORED} >/dev/null 2>&1; docker network rm ${NETWORK} >/dev/null`),
  );
  const appliance = { url: `http://${await startContainer(APPLIANCE, image)}:3000` };

  // A host check that fails stops the install before anything changes, and says what to do.
  const unpackStarted = Date.now();
  await unpack(APPLIANCE, FIRST);
  t.comment(`tar -xf of the bundle: ${seconds(Date.now() - unpackStarted)} s`);
  await ok(runProgram('docker', ['exec', '-d', APPLIANCE, 'node', '-e', BUSY_PORT]), 'occupy port 3000');
  await ok(inContainer('sh', '-c', 'until [ -f /tmp/busy.pid ]; do sleep 0.1; done'), 'wait for the listener');
  const refused = await inContainer(`/root/vision-appliance-${FIRST}/install.sh`);
  t.equal(refused.code, 1);
  t.match(refused.stdout, 'FAIL  port 3000 is in use by another program: stop it, or install with --port N');
  t.equal(refused.stderr, 'install.sh: 1 problem(s) above (FAIL) stop the install; nothing was changed\n');
  t.equal((await inContainer('test', '-e', '/opt/vision-appliance')).code, 1, 'nothing was changed');
  await ok(inContainer('sh', '-c', 'kill $(cat /tmp/busy.pid)'), 'free port 3000');

  const first = await install(APPLIANCE, FIRST, '--public-url', appliance.url);
  t.comment(`install.sh from the unpacked bundle (first start: initdb, migrations): ${seconds(first.ms)} s`);
  t.match(first.output, 'warn  no systemd (a container?): the control plane runs as a background process');
  t.match(first.output, `The Vision Platform appliance ${FIRST} is ready at ${appliance.url}/api`);
  t.match(first.output, `The first owner's API key is in ${KEY_FILE} (mode 0600)`);
  t.match(
    first.output,
    `tar -xzf vp-worker-${FIRST}-linux-x64.tar.gz && vp-worker-${FIRST}/install-worker.sh --server ${appliance.url} --token TOKEN`,
    'how to add a GPU host',
  );
  t.notMatch(first.output, /ul_[0-9a-f]{40}|SIGNING_SECRET=/, 'no key nor secret printed');
  t.ok(await ready(appliance.url), '/api/ready answers 200');
  const consolePage = await fetch(`${appliance.url}/`, { headers: { accept: 'text/html' } });
  t.match(
    { status: consolePage.status, type: consolePage.headers.get('content-type'), body: await consolePage.text() },
    { status: 200, type: /^text\/html/, body: /<script type="module"[^>]* src="\/assets\// },
    'the installed appliance serves the built console at /',
  );
  t.equal(
    (await ok(inContainer('stat', '-c', '%a %U', KEY_FILE, '/etc/vision-appliance/appliance.env'), 'stat')).trim(),
    '600 vision\n600 root',
  );
  t.match(
    await ok(inContainer('cat', '/etc/vision-appliance/appliance.env'), 'cat'),
    /^SIGNING_SECRET=[0-9a-f]{64}$/m,
    'a generated signing secret',
  );
  const key = (await ok(inContainer('cat', KEY_FILE), 'key')).trim();
  t.match(await call(appliance, 'GET', '/api/account/summary', { key }), {
    status: 200,
    body: { username: 'admin', role: 'owner' },
  });
  t.match(await call(appliance, 'POST', '/api/projects', { key, body: { project: 'kept', name: 'Kept' } }), {
    status: 201,
  });
  const settings = async () => ok(inContainer('sha256sum', '/etc/vision-appliance/appliance.env'), 'sha256sum');
  const settingsBefore = await settings();

  const again = await install(APPLIANCE, FIRST);
  t.match(again.output, 'already unpacked');
  t.equal(await settings(), settingsBefore, 'a second run keeps the settings (and the secret)');
  t.equal((await ok(inContainer('cat', KEY_FILE), 'key')).trim(), key);
  t.match(
    await call(appliance, 'GET', '/api/projects/admin/kept', { key }),
    KEPT,
    'the same key still works, the data is there',
  );

  // The single-machine case: the appliance's host runs jobs too (no Docker there: the process runtime, in the pool, so
  // allowed explicitly). Its agent is stopped again before the trainings below, which need the trainer's Python of the GPU host.
  const local = await install(APPLIANCE, FIRST, '--gpu-host', 'local-gpu', '--allow-shared-process-runtime');
  t.match(local.output, `installed: /opt/vp-worker/${FIRST}`);
  t.match(local.output, 'Enrolled as host local-gpu');
  await ok(
    runProgram('docker', [
      'exec',
      '-d',
      '-u',
      'vp-worker',
      APPLIANCE,
      'sh',
      '-c',
      'echo $$ >/tmp/agent.pid; exec vp-worker run --config /etc/vp-worker/config.json >>/var/lib/vp-worker/agent.log 2>&1',
    ]),
    'start the local agent',
  );
  const hostsList = async () =>
    (await ok(inContainer('vision-appliance', 'vpctl', 'hosts', 'list'), 'vpctl hosts list'))
      .split('\n')
      .find((line) => line.startsWith('local-gpu')) ?? '';
  await eventually(async () => /\bconnected\b/.test(await hostsList()), 'the local agent to connect', 60_000, POLL_MS);
  t.match(await hostsList(), ` ${FIRST}`, "the local agent reports the bundle's version");
  await ok(
    inContainer(
      'sh',
      '-c',
      'pid=$(cat /tmp/agent.pid); kill "$pid"; while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done',
    ),
    'stop the local agent',
  );

  // A GPU host enrolls from the bundle with a token from the appliance's operator CLI, and trains.
  await startContainer(GPU_HOST, TRAINER_IMAGE);
  const token = (
    await ok(
      inContainer('vision-appliance', 'vpctl', 'hosts', 'connect', 'gpu-1', '--workspace', 'admin'),
      'vpctl hosts connect',
    )
  ).trim();
  t.match(
    await installWorker(FIRST, appliance.url, '--token', token, '--venv', '/opt/trainer'),
    'Enrolled as host gpu-1',
  );
  await startAgent();
  await eventually(
    async () => (await gpuHost(appliance, key))?.state === 'connected',
    'the GPU host to connect',
    60_000,
    POLL_MS,
  );
  t.match(await gpuHost(appliance, key), { agentVersion: FIRST, agentOutdated: false }, 'the agent of the same bundle');
  await ok(inContainer('vision-appliance', 'vpctl', 'credits', 'grant', 'admin', '100'), 'vpctl credits grant');
  await createShapesDataset(t, { server: appliance }, key, 'admin', 'shapes', { train: 8, val: 4 });
  t.match(await call(appliance, 'POST', '/api/projects', { key, body: { project: 'detector', name: 'Detector' } }), {
    status: 201,
  });
  t.match(
    await train(t, appliance, key, 'first'),
    { status: 'completed', compute: { host: 'gpu-1' } },
    'a short training on the GPU host',
  );
  // The bundle's models: dataset analysis embeds the images offline.
  t.match(await call(appliance, 'POST', '/api/datasets/admin/shapes/embeddings', { key }), { status: 202 });
  const analysed = await eventually(
    async () => {
      const summary = (
        await call<{ activeJob: unknown; embeddingsCount: number }>(
          appliance,
          'GET',
          '/api/datasets/admin/shapes/embeddings',
          { key },
        )
      ).body;
      return summary.activeJob === null && summary;
    },
    'the dataset analysis',
    120_000,
    POLL_MS,
  );
  t.equal(analysed.embeddingsCount, 12, "every image embedded by the release's own model");

  // Someone polls /api/ready throughout the upgrade: the longest time between two ready answers is the downtime seen.
  let polling = true;
  let last = Date.now();
  let gap = 0;
  const poller = (async () => {
    while (polling) {
      if (
        await fetch(`${appliance.url}/api/ready`, { signal: AbortSignal.timeout(1000) }).then(
          (r) => r.ok,
          () => false,
        )
      ) {
        gap = Math.max(gap, Date.now() - last);
        last = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const upgrade = await install(APPLIANCE, SECOND);
  polling = false;
  await poller;
  const reported = /upgraded 1\.0\.0-test\.1 -> 1\.0\.0-test\.2: downtime ([\d.]+) s/.exec(upgrade.output);
  t.ok(reported, reported ? 'install.sh prints the upgrade downtime' : upgrade.output);
  t.comment(
    `upgrade downtime: ${reported?.[1]} s by install.sh, ${seconds(gap)} s between two ready answers seen by a client polling every 50 ms`,
  );
  t.ok(await ready(appliance.url));
  t.match(await call(appliance, 'GET', '/api/projects/admin/kept', { key }), KEPT, 'data kept over the upgrade');
  t.match(await ok(inContainer('vision-appliance', 'status'), 'status'), `release:  ${SECOND} (previous: ${FIRST})`);
  t.match(upgrade.output, `installed: /opt/vp-worker/${SECOND}`, "the upgrade upgrades this host's agent too");

  // The agent one version behind reconnects, is named as outdated, and still trains.
  await eventually(
    async () => (await gpuHost(appliance, key))?.state === 'connected',
    'the GPU host to reconnect',
    60_000,
    POLL_MS,
  );
  t.match(await gpuHost(appliance, key), { agentVersion: FIRST, agentOutdated: true });
  t.match(
    (await inContainer('vision-appliance', 'vpctl', 'doctor')).stdout,
    'gpu-1',
    'vpctl doctor names the host to upgrade',
  );
  t.match(
    await train(t, appliance, key, 'behind'),
    { status: 'completed', compute: { host: 'gpu-1' } },
    'an agent one version behind trains',
  );

  // Its upgrade: the new bundle's install-worker.sh without a token keeps the enrollment; the agent restarts.
  t.match(await installWorker(SECOND, appliance.url), 'enrolled: already, as host gpu-1');
  await stopAgent();
  await startAgent();
  await eventually(
    async () => (await gpuHost(appliance, key))?.agentVersion === SECOND,
    'the upgraded agent to connect',
    60_000,
    POLL_MS,
  );
  t.match(await gpuHost(appliance, key), { state: 'connected', agentOutdated: false });

  const older = await inContainer(`/root/vision-appliance-${FIRST}/install.sh`);
  t.equal(older.code, 1, 'an older bundle is not installed over a newer release');
  t.match(
    older.stderr,
    `this bundle (${FIRST}) is older than the running ${SECOND}, whose database schema is newer: to go back to the previous release, run: vision-appliance rollback`,
  );

  const rollback = await ok(inContainer(`/root/vision-appliance-${SECOND}/install.sh`, '--rollback'), 'rollback');
  t.match(rollback, `Reverted 1 migration:\n  ${EXTRA_MIGRATION}`, "the newer release's migration is reverted first");
  t.match(rollback, `rolled back to ${FIRST}: downtime`);
  t.comment(rollback.trim().split('\n').at(-1)!);
  t.ok(await ready(appliance.url), 'the older release is ready on the migrated-down database');
  t.match(await call(appliance, 'GET', '/api/projects/admin/kept', { key }), KEPT, 'data kept over the rollback');
  t.match(await ok(inContainer('vision-appliance', 'status'), 'status'), `release:  ${FIRST} (previous: ${SECOND})`);

  // A backup of the running appliance restores into a new install on another host, which answers the same.
  await stopAgent();
  await ok(inContainer('install', '-d', '-o', 'vision', '/var/backups/appliance'), 'the backup folder');
  await ok(inContainer('vision-appliance', 'vpctl', 'backup', '/var/backups/appliance'), 'vpctl backup');
  const restoredAppliance = { url: `http://${await startContainer(RESTORED, image)}:3000` };
  await ok(
    bash(`docker cp ${APPLIANCE}:/var/backups/appliance - | docker cp - ${RESTORED}:/var/backups/`),
    'copy the backup to the new host',
  );
  // Its key apart: vpctl backup wrote it into the old server's data dir, not into the backup.
  await ok(
    bash(`docker cp ${APPLIANCE}:/var/lib/vision-appliance/backup-key - | docker cp - ${RESTORED}:/root/`),
    'copy the backup key to the new host',
  );
  const restored = await install(
    RESTORED,
    FIRST,
    '--public-url',
    restoredAppliance.url,
    '--restore',
    '/var/backups/appliance',
    '--backup-key',
    '/root/backup-key',
  );
  t.match(restored.output, /Restored the backup of [^]* every checksum verified/);
  t.match(restored.output, `The Vision Platform appliance ${FIRST} is ready at ${restoredAppliance.url}/api`);
  const requests = [
    '/api/projects/admin/kept',
    '/api/projects/admin/detector',
    '/api/datasets/admin/shapes',
    '/api/datasets/admin/shapes/images?limit=100',
    '/api/models/admin/detector',
    '/api/models/admin/detector/first',
    '/api/models/admin/detector/behind/training',
    '/api/models/admin/detector/first/files',
  ];
  const before = await answers(appliance, key, requests);
  const after = await answers(restoredAppliance, key, requests);
  t.same(after.bodies, before.bodies, 'the same answers, with the same key');
  t.same(after.served, before.served, 'the same bytes behind every URL');
  t.ok(Object.keys(before.served).length > 0, `${Object.keys(before.served).length} signed URLs compared`);
  const twice = await exec(
    RESTORED,
    `/root/vision-appliance-${FIRST}/install.sh`,
    '--restore',
    '/var/backups/appliance',
    '--backup-key',
    '/root/backup-key',
  );
  t.equal(twice.code, 1, 'a restore only into a new install');
  t.match(twice.stderr, '--restore: this host runs release');
});
