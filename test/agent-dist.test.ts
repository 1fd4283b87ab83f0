// The worker agent's distribution (installer/dist): built from this checkout (cached by content), unpacked in a temp
// dir that reaches nothing of the checkout, installed by its own install-worker.sh (unprivileged, no systemd, the
// process runtime) against a real control plane and run from there: the host enrolls, connects (reporting the
// distribution's version), probes the trainer environment install-worker.sh saved (--venv) and serves a deployment with
// the inference server on the distribution's Node and packages. After a disconnect, the path the agent, install-worker.sh
// and vpctl name enrolls the host again; rotation serves a host whose agent is stopped. The archive holds no test or
// benchmark tools.
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EntityManager } from '@mikro-orm/postgresql';
import t, { type Test } from 'tap';
import { ProcessJobState } from '../worker-agent/src/runtimes/process-job-state.ts';
import { spawnKept } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { runNode } from './helpers/run-node.ts';
import { predictAt } from './helpers/inference-server.ts';
import { createProject } from './helpers/models.ts';
import { servableModel } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { runCommand, trainedModel } from './helpers/yolo-models.ts';

t.setTimeout(10 * 60_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const fixture = await trainedModel('detect');
const dir = mkdtempSync(join(tmpdir(), 'vp-agent-dist-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const archive = (
  await runCommand(join(ROOT, 'installer/dist/build-agent-dist.sh'), [], { cwd: ROOT, env: process.env })
)
  .trim()
  .split('\n')
  .at(-1)!;
const entries = (await runCommand('tar', ['-tzf', archive], { cwd: dir, env: process.env })).split('\n');
const top = entries[0]!; // vp-worker-<version>/
const version = top.replace(/^vp-worker-|\/$/g, '');

const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1', RATE_LIMIT_MUTATION: '1000' });
const { server, alice } = world;
await runCommand('tar', ['-xzf', archive, '-C', dir], { cwd: dir, env: process.env });
const unpacked = join(dir, top);
// What a host has: the system's PATH (not this checkout's node_modules/.bin) and nothing of the test runner's settings.
const PATH = (process.env.PATH ?? '/usr/bin:/bin')
  .split(':')
  .filter((entry) => !entry.startsWith(ROOT))
  .join(':');
const hostEnv = { PATH, HOME: join(dir, 'home'), LANG: 'C.UTF-8' };
const config = join(dir, 'etc/config.json');
const workRoot = join(dir, 'work');
const prefix = join(dir, 'opt');
const installEnv = {
  ...hostEnv,
  VP_WORKER_PREFIX: prefix,
  VP_WORKER_CONFIG: config,
  VP_WORKER_WORK_DIR: workRoot,
  VP_WORKER_BIN_DIR: join(dir, 'bin'),
  VP_WORKER_USER: userInfo().username,
  VP_WORKER_RUNTIME: 'process',
};
/** The trainer's Python environment of this checkout, as a host has it. */
const VENV = join(ROOT, '.venv-trainer');

/** install-worker.sh as this host's operator runs it: its status and what it printed (stdout and stderr). */
async function installWorker(args: string[]): Promise<{ code: number | null; output: string }> {
  const run = spawnKept(
    t,
    join(unpacked, 'install-worker.sh'),
    [...args, '--no-systemd', '--allow-shared-process-runtime'],
    { cwd: dir, env: installEnv },
  );
  return { code: await run.exited, output: run.output() };
}
const install = (token: string | undefined, ...more: string[]) =>
  installWorker(['--server', server.url, ...(token ? ['--token', token] : []), ...more]);
const vpctl = (...args: string[]) =>
  runNode(['installer/src/vpctl.ts', ...args], {
    DATABASE_URL: server.databaseUrl,
    DATA_DIR: join(dir, 'data'),
    PUBLIC_BASE_URL: server.url,
  });
const startAgent = (t: Test) =>
  spawnKept(t, join(dir, 'bin/vp-worker'), ['run', '--config', config], { cwd: dir, env: hostEnv });
const distHost = async () => (await server.services().hosts.listAll()).find((each) => each.name === 'dist-host');

/** The agent's servers are process groups of their own, which outlive it: killed when the test ends. */
function killServersAtEnd(t: Test): void {
  t.teardown(async () => {
    for (const { record } of await ProcessJobState.list(workRoot)) {
      try {
        process.kill(-record.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

t.test(
  'the archive: the agent, its Node and its production packages, nothing of the tests or benchmarks',
  async (t) => {
    t.match(archive, new RegExp(`/vp-worker-${version}-linux-x64\\.tar\\.gz$`));
    for (const file of [
      'bin/node',
      'bin/vp-worker',
      'install-worker.sh',
      'vp-worker.service',
      'worker-agent/src/main.ts',
      'inference-server/src/main.ts',
      'node_modules/onnxruntime-node/package.json',
      'node_modules/dockerode/package.json',
    ]) {
      t.ok(entries.includes(`${top}${file}`), file);
    }
    // Root devDependencies (the `node` package among them: the binary is bin/node) and the workspaces' own.
    for (const tool of [
      'tap',
      'typescript',
      'autocannon',
      '@seriousme/openapi-schema-validator',
      'node',
      '@types/yazl',
      '@types/dockerode',
    ]) {
      t.notOk(
        entries.some((entry) => entry.startsWith(`${top}node_modules/${tool}/`)),
        `no ${tool}`,
      );
    }
    t.same(
      entries.filter((entry) => /^[^/]+\/(test|bench)\//.test(entry)),
      [],
      'no test/ or bench/',
    );
  },
);

t.test(
  'install-worker.sh installs, enrolls and says how to start the agent; run again, it changes nothing',
  async (t) => {
    t.match(
      readFileSync(join(unpacked, 'vp-worker.service'), 'utf8'),
      /^RestartPreventExitStatus=3 4 5 6$/m,
      'the unit does not restart on permanent failures',
    );
    const { enrollmentToken } = await server.services().hosts.connect('dist-host');
    const first = await install(enrollmentToken);
    t.equal(first.code, 0, first.output);
    t.match(first.output, /Enrolled as host dist-host/);
    t.match(
      first.output,
      `start the agent (restart it after an upgrade): ${join(dir, 'bin/vp-worker')} run --config ${config}\n`,
    );
    t.match(
      first.output,
      'WARNING: no trainer environment (--venv DIR): training and export jobs fail here',
      'the process runtime without a trainer is named',
    );
    t.equal(readlinkSync(join(prefix, 'current')), version, 'current points at the installed version');
    t.match(JSON.parse(readFileSync(config, 'utf8')), {
      server: server.url,
      hostName: 'dist-host',
      workerKey: /^vpw_/,
      runtime: 'process',
      workDir: workRoot,
      allowSharedProcessRuntime: 'true',
    });
    t.equal(statSync(config).mode & 0o777, 0o600, 'the worker key is readable by its owner only');

    // The trainer's environment is checked, then saved where the agent reads it at every start.
    const notVenv = await install(undefined, '--venv', workRoot);
    t.equal(notVenv.code, 1, notVenv.output);
    t.match(
      notVenv.output,
      `FAILED: the trainer environment ${workRoot} (--venv): ${workRoot}/bin/python is missing or not executable`,
    );
    // The token is spent: a second run must not need it.
    const again = await install(enrollmentToken, '--venv', VENV);
    t.equal(again.code, 0, again.output);
    t.match(again.output, /installed: .* \(build \w+, unchanged\)/);
    t.match(again.output, `trainer environment: ${VENV}\n`);
    t.match(
      again.output,
      'enrolled: already, as host dist-host (the token was not used: --reenroll to enroll with it instead)',
    );
    t.match(JSON.parse(readFileSync(config, 'utf8')), { processVenv: VENV, allowSharedProcessRuntime: 'true' });
    t.notMatch((await install(undefined)).output, /WARNING: no trainer environment/, 'the saved one is kept');
  },
);

t.test(
  'the agent from the distribution connects, probes its saved trainer environment and serves a deployment on its own Node',
  async (t) => {
    t.notOk('VP_WORKER_PROCESS_VENV' in hostEnv);
    const agent = startAgent(t);
    killServersAtEnd(t);
    await createProject(world, alice, { project: 'vision', name: 'vision' });
    await servableModel(world, alice, 'vision', 'detector', fixture);
    const body = {
      project: 'vision',
      model: 'detector',
      deployment: 'from-dist',
      name: 'from-dist',
      region: 'us-central1',
    };
    const { id } = await eventually(
      async () => {
        const created = await call<{ id: string }>(server, 'POST', '/api/deployments/alice', { key: alice, body });
        return created.status === 201 && created.body;
      },
      `the host to connect and offer inference servers; agent output:\n${agent.output()}`,
      60_000,
    );
    t.equal((await distHost())?.agentVersion, version, "the agent reports its distribution's VERSION");
    const exporters = await eventually(
      async () => (await distHost())?.exporters.includes('onnx') && (await distHost())?.exporters,
      `the probe of ${VENV}; agent output:\n${agent.output()}`,
      60_000,
    );
    t.ok(exporters, `the exporters of the saved processVenv, without VP_WORKER_PROCESS_VENV: ${String(exporters)}`);
    await eventually(
      async () => {
        const { deployment } = (
          await call<{ deployment: { status: string } }>(server, 'GET', '/api/deployments/alice/from-dist', {
            key: alice,
          })
        ).body;
        if (deployment.status === 'failed') throw new Error(`the deployment failed; agent output:\n${agent.output()}`);
        return deployment.status === 'ready';
      },
      'the deployment to be ready',
      120_000,
    );

    const upstream = await server.deploymentRouter.upstream(server.orm.em.fork() as EntityManager, id);
    const [picture] = await writeTestPictures(dir);
    const answer = await predictAt(upstream.url, readFileSync(picture!.file), { conf: '0.05' }, upstream.token);
    t.equal(answer.status, 200, JSON.stringify(answer.body).slice(0, 300));
    t.match(answer.body.metadata, { model: 'alice/vision/detector', task: 'detect' });

    // The server is the supervisor's child: the distribution's Node running the distribution's inference server.
    const [job] = await ProcessJobState.list(workRoot);
    const [serverPid] = readFileSync(`/proc/${job!.record.pid}/task/${job!.record.pid}/children`, 'utf8')
      .trim()
      .split(' ');
    const installed = join(prefix, version);
    t.equal(readlinkSync(`/proc/${serverPid}/exe`), join(installed, 'bin/node'));
    t.equal(
      readFileSync(`/proc/${serverPid}/cmdline`, 'utf8').split('\0')[1],
      join(installed, 'inference-server/src/main.ts'),
    );
  },
);

t.test(
  'after a disconnect the agent, install-worker.sh and vpctl lead to one command that enrolls the host again',
  async (t) => {
    killServersAtEnd(t);
    // This agent's own connection: the host still reads connected after the last subtest's agent was killed.
    const connectedAgain = (agent: { output(): string }) =>
      eventually(
        async () =>
          agent.output().includes('connected to the control plane') && (await distHost())?.state === 'connected',
        `the agent to connect; its output:\n${agent.output()}`,
        60_000,
      );
    let agent = startAgent(t);
    await connectedAgain(agent);
    t.equal((await vpctl('hosts', 'disconnect', 'dist-host')).code, 0);
    t.equal(await agent.exited, 3, 'the agent stops on its refused key');
    t.match(
      agent.output(),
      'on the appliance run `vpctl hosts rotate dist-host` (or `vpctl hosts connect dist-host [--workspace W]` when `vpctl hosts list` no longer lists it',
    );
    t.match(
      agent.output(),
      `\`vp-worker enroll --server ${server.url} --token TOKEN --config ${config}\``,
      'the exact command, with its config',
    );

    // Without a token (as for an upgrade) install-worker.sh does not pass the refused key for an enrollment.
    const refused = await install(undefined);
    t.equal(refused.code, 1, refused.output);
    t.match(
      refused.output,
      `FAILED: ${server.url} refuses the worker key in ${config} (host dist-host: disconnected, or enrolled again elsewhere). On the appliance run vpctl hosts rotate dist-host (or vpctl hosts connect dist-host [--workspace W]`,
    );
    t.notMatch(refused.output, /enrolled: already|done:/);
    t.match(await vpctl('hosts', 'rotate', 'dist-host'), {
      code: 1,
      stderr:
        /not found: disconnecting removes a host; to enroll the machine again, connect it again \(vpctl hosts connect dist-host/,
    });

    // The line connect prints, as printed: the refused key is replaced.
    const connected = await vpctl('hosts', 'connect', 'dist-host');
    t.equal(connected.code, 0, connected.stderr);
    const printed = /\n {2}sudo \.\/install-worker\.sh (--server \S+ --token \S+)\n/.exec(connected.stderr)?.[1];
    t.ok(printed, connected.stderr);
    const reenrolled = await installWorker(printed!.split(' '));
    t.equal(reenrolled.code, 0, reenrolled.output);
    t.match(
      reenrolled.output,
      `${server.url} refuses the worker key in ${config} (host dist-host): enrolling with the token`,
    );
    t.match(reenrolled.output, 'Enrolled as host dist-host');
    agent = startAgent(t);
    await connectedAgain(agent);

    // Its agent stopped, the host stays (disconnected) and rotates; the line printed replaces the key that still works.
    agent.child.kill('SIGTERM');
    t.equal(await agent.exited, 0);
    await eventually(async () => (await distHost())?.state === 'disconnected', 'the host to be disconnected', 30_000);
    const rotated = await vpctl('hosts', 'rotate', 'dist-host');
    t.equal(rotated.code, 0, rotated.stderr);
    const rotation = /\n {2}sudo \.\/install-worker\.sh (--server \S+ --token \S+ --reenroll)\n/.exec(
      rotated.stderr,
    )?.[1];
    t.ok(rotation, rotated.stderr);
    const keyBefore = (JSON.parse(readFileSync(config, 'utf8')) as { workerKey: string }).workerKey;
    const replaced = await installWorker(rotation!.split(' '));
    t.equal(replaced.code, 0, replaced.output);
    t.match(replaced.output, 'Enrolled as host dist-host');
    t.not((JSON.parse(readFileSync(config, 'utf8')) as { workerKey: string }).workerKey, keyBefore, 'a new key');
    agent = startAgent(t);
    await connectedAgain(agent);
  },
);
