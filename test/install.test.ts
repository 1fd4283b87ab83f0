// The offline install, for real: installer/bundle/build-bundle.sh builds two bundles (the second from a copy of the
// sources with one more migration), and a disposable container of the local Debian base image (no network, no
// systemd) installs the first with its install.sh, runs it again, upgrades to the second and rolls back: the API is
// ready each time, the first owner's key keeps working and the data stays.
import { mkdirSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { runProgram, type Run } from './helpers/run-node.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WORK = join(ROOT, '.cache', 'install-test');
const BUNDLES = join(WORK, 'bundles');
const [FIRST, SECOND] = ['1.0.0-test.1', '1.0.0-test.2'];
const EXTRA_MIGRATION = 'Migration20991231000000_install_test';
const CONTAINER = `vp-install-test-${process.pid}`;
const KEY_FILE = '/var/lib/vision-appliance/initial-api-key';

async function ok(run: Promise<Run>, what: string): Promise<string> {
  const result = await run;
  if (result.code !== 0) throw new Error(`${what} exited with ${result.code}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

const bash = (script: string) => runProgram('bash', ['-c', script]);
const inContainer = (...args: string[]) => runProgram('docker', ['exec', CONTAINER, ...args]);

/** Builds vision-appliance-<version>.tar from the sources at `source` (with the checkout's cache); how long it took. */
async function buildBundle(source: string, version: string): Promise<number> {
  const started = Date.now();
  const script = join(source, 'installer/bundle/build-bundle.sh');
  const path = await ok(runProgram(script, ['--version', version, '--out', BUNDLES], { VP_BUNDLE_CACHE: join(ROOT, '.cache', 'bundle') }), `build-bundle ${version}`);
  if (path.trim() !== join(BUNDLES, `vision-appliance-${version}.tar`)) throw new Error(`build-bundle printed ${path}`);
  return Date.now() - started;
}

/** The checkout's sources (what build-bundle.sh packs) with one more migration, which adds and drops a table. */
async function sourcesWithExtraMigration(): Promise<string> {
  const copy = join(WORK, 'source-with-migration');
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(copy, { recursive: true });
  await ok(
    bash(`cd "${ROOT}" && git ls-files -z --cached --others --exclude-standard -- config protocol inference inference-server control-plane worker-agent installer package.json package-lock.json .npmrc LICENSE NOTICE README.md |
      xargs -0 sh -c 'for f; do [ -f "$f" ] && printf "%s\\0" "$f"; done' sh | tar -c --null -T - | tar -x -C "${copy}"`),
    'copy the sources',
  );
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
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
  const images = await ok(runProgram('docker', ['images', '--format', '{{.Repository}}:{{.Tag}}', '--filter', 'reference=vp-inference-base:*']), 'docker images');
  const image = images.split('\n')[0];
  if (!image) throw new Error('no vp-inference-base:* image: run installer/inference/build-inference-image.sh as root (.ci/run does)');
  return image;
}

const unpacked = new Set<string>();
/** Another program on the API's port (the base image's own node), its pid in /tmp/busy.pid once it listens. */
const BUSY_PORT = "require('node:net').createServer().listen(3000, () => require('node:fs').writeFileSync('/tmp/busy.pid', String(process.pid)))";

/** Runs the install.sh of a bundle in the container, unpacked there first if need be; its output and how long it took. */
async function install(version: string, ...args: string[]): Promise<{ output: string; ms: number }> {
  const started = Date.now();
  if (!unpacked.has(version)) await ok(inContainer('tar', '-xf', `/bundles/vision-appliance-${version}.tar`, '-C', '/root'), 'unpack');
  unpacked.add(version);
  const output = await ok(inContainer(`/root/vision-appliance-${version}/install.sh`, ...args), `install.sh ${version}`);
  return { output, ms: Date.now() - started };
}

/** An API request from inside the container, made by the installed release's node. */
async function api(key: string, method: string, path: string, body?: object): Promise<{ status: number; body: unknown }> {
  const script = `fetch('http://127.0.0.1:3000' + process.argv[2], { method: process.argv[1], headers: { authorization: 'Bearer ' + process.argv[3], 'content-type': 'application/json' }, body: process.argv[4] || undefined })
    .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))`;
  return JSON.parse(await ok(inContainer('/opt/vision-appliance/current/bin/node', '-e', script, method, path, key, body ? JSON.stringify(body) : ''), `${method} ${path}`));
}

const KEPT = { status: 200, body: { project: { name: 'Kept' } } };
const ready = async () => (await inContainer('/opt/vision-appliance/current/bin/node', '-e', "fetch('http://127.0.0.1:3000/api/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))")).code === 0;
const seconds = (ms: number) => (ms / 1000).toFixed(1);

t.test('install from the offline bundle, again, upgrade, rollback', async (t) => {
  const image = await baseImage();
  mkdirSync(BUNDLES, { recursive: true });
  const firstBuild = await buildBundle(ROOT, FIRST);
  const secondBuild = await buildBundle(await sourcesWithExtraMigration(), SECOND);
  const size = (await ok(bash(`stat -c %s "${BUNDLES}/vision-appliance-${FIRST}.tar"`), 'stat')).trim();
  t.comment(`bundles built in ${seconds(firstBuild)} s and ${seconds(secondBuild)} s (cached by content); ${Math.round(Number(size) / 2 ** 20)} MiB without the trainer`);

  await ok(runProgram('docker', ['run', '-d', '--init', '--network', 'none', '--name', CONTAINER, '-v', `${BUNDLES}:/bundles:ro`, image, 'sleep', 'infinity']), 'docker run');
  t.teardown(() => runProgram('docker', ['rm', '-f', CONTAINER]));

  // A host check that fails stops the install before anything changes, and says what to do.
  const unpackStarted = Date.now();
  await ok(inContainer('tar', '-xf', `/bundles/vision-appliance-${FIRST}.tar`, '-C', '/root'), 'unpack');
  t.comment(`tar -xf of the bundle: ${seconds(Date.now() - unpackStarted)} s`);
  unpacked.add(FIRST);
  await ok(runProgram('docker', ['exec', '-d', CONTAINER, 'node', '-e', BUSY_PORT]), 'occupy port 3000');
  await ok(inContainer('sh', '-c', 'until [ -f /tmp/busy.pid ]; do sleep 0.1; done'), 'wait for the listener');
  const refused = await inContainer(`/root/vision-appliance-${FIRST}/install.sh`);
  t.equal(refused.code, 1);
  t.match(refused.stdout, 'FAIL  port 3000 is in use by another program: stop it, or install with --port N');
  t.equal(refused.stderr, 'install.sh: 1 problem(s) above (FAIL) stop the install; nothing was changed\n');
  t.equal((await inContainer('test', '-e', '/opt/vision-appliance')).code, 1, 'nothing was changed');
  await ok(inContainer('sh', '-c', 'kill $(cat /tmp/busy.pid)'), 'free port 3000');

  const first = await install(FIRST);
  t.comment(`install.sh from the unpacked bundle (first start: initdb, migrations): ${seconds(first.ms)} s`);
  t.match(first.output, 'warn  no systemd (a container?): the control plane runs as a background process');
  t.match(first.output, `The Vision Platform appliance ${FIRST} is ready at http://`);
  t.match(first.output, `The first owner's API key is in ${KEY_FILE} (mode 0600)`);
  t.notMatch(first.output, /ul_[0-9a-f]{40}|SIGNING_SECRET=/, 'no key nor secret printed');
  t.ok(await ready(), '/api/ready answers 200');
  t.equal((await ok(inContainer('stat', '-c', '%a %U', KEY_FILE, '/etc/vision-appliance/appliance.env'), 'stat')).trim(), '600 vision\n600 root');
  t.match(await ok(inContainer('cat', '/etc/vision-appliance/appliance.env'), 'cat'), /^SIGNING_SECRET=[0-9a-f]{64}$/m, 'a generated signing secret');
  const key = (await ok(inContainer('cat', KEY_FILE), 'key')).trim();
  t.match(await api(key, 'GET', '/api/account/summary'), { status: 200, body: { username: 'admin', role: 'owner' } });
  t.match(await api(key, 'POST', '/api/projects', { project: 'kept', name: 'Kept' }), { status: 201 });
  const settings = async () => ok(inContainer('sha256sum', '/etc/vision-appliance/appliance.env'), 'sha256sum');
  const settingsBefore = await settings();

  const again = await install(FIRST);
  t.match(again.output, 'already unpacked');
  t.equal(await settings(), settingsBefore, 'a second run keeps the settings (and the secret)');
  t.equal((await ok(inContainer('cat', KEY_FILE), 'key')).trim(), key);
  t.match(await api(key, 'GET', '/api/projects/admin/kept'), KEPT, 'the same key still works, the data is there');

  // Someone polls /api/ready throughout the upgrade: the longest time between two ready answers is the downtime seen.
  const poller = inContainer(
    `/opt/vision-appliance/releases/${FIRST}/bin/node`,
    '-e',
    `let last = Date.now(), gap = 0;
    (async () => {
      while (!require('node:fs').existsSync('/tmp/stop-polling')) {
        if (await fetch('http://127.0.0.1:3000/api/ready', { signal: AbortSignal.timeout(1000) }).then((r) => r.ok, () => false)) {
          gap = Math.max(gap, Date.now() - last);
          last = Date.now();
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      console.log(gap);
    })();`,
  );
  const upgrade = await install(SECOND);
  await ok(inContainer('touch', '/tmp/stop-polling'), 'stop polling');
  const seen = Number(await ok(poller, 'poller'));
  const reported = /upgraded 1\.0\.0-test\.1 -> 1\.0\.0-test\.2: downtime ([\d.]+) s/.exec(upgrade.output);
  t.ok(reported, reported ? 'install.sh prints the upgrade downtime' : upgrade.output);
  t.comment(`upgrade downtime: ${reported?.[1]} s by install.sh, ${seconds(seen)} s between two ready answers seen by a client polling every 50 ms`);
  t.ok(await ready());
  t.match(await api(key, 'GET', '/api/projects/admin/kept'), KEPT, 'data kept over the upgrade');
  t.match(await ok(inContainer('vision-appliance', 'status'), 'status'), `release:  ${SECOND} (previous: ${FIRST})`);

  const older = await inContainer(`/root/vision-appliance-${FIRST}/install.sh`);
  t.equal(older.code, 1, 'an older bundle is not installed over a newer release');
  t.match(older.stderr, `this bundle (${FIRST}) is older than the running ${SECOND}, whose database schema is newer: to go back to the previous release, run: vision-appliance rollback`);

  const rollback = await ok(inContainer(`/root/vision-appliance-${SECOND}/install.sh`, '--rollback'), 'rollback');
  t.match(rollback, `Reverted 1 migration:\n  ${EXTRA_MIGRATION}`, "the newer release's migration is reverted first");
  t.match(rollback, `rolled back to ${FIRST}: downtime`);
  t.comment(rollback.trim().split('\n').at(-1)!);
  t.ok(await ready(), 'the older release is ready on the migrated-down database');
  t.match(await api(key, 'GET', '/api/projects/admin/kept'), KEPT, 'data kept over the rollback');
  t.match(await ok(inContainer('vision-appliance', 'status'), 'status'), `release:  ${FIRST} (previous: ${SECOND})`);
});
