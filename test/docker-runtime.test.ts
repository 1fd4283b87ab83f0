// The Docker runtime against a real Docker engine (test/helpers/docker.ts starts one when none runs) with a busybox
// image built locally: outcomes, logs, the work dir mount, limits and labels, stop, timeout, running out of memory,
// images that are not there, GPU requests (as create options: there is no GPU here), and recover() after the agent
// that started the containers was killed.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import type { JobSpec } from '@vp/protocol';
import {
  containerName,
  containerOptions,
  DockerRuntime,
  JOB_NETWORK,
  jobUser,
  type DockerRuntimeOptions,
} from '../worker-agent/src/runtimes/docker-runtime.ts';
import type { JobAssignment, LogSink, LogStream } from '../worker-agent/src/runtimes/runtime.ts';
import { withoutTimes } from './helpers/job-outcomes.ts';
import { dockerForTests } from './helpers/docker.ts';
import { probeExporters } from '../worker-agent/src/exporter-probe.ts';
import type { Logger } from '../worker-agent/src/log.ts';

const { docker, image } = await dockerForTests();
const workRoot = realpathSync(mkdtempSync(join(tmpdir(), 'vp-docker-runtime-')));
// Unique to this run, in the host label and in job ids (so in container names): runs side by side never meet.
const suffix = randomBytes(4).toString('hex');
const host = `test-host-${suffix}`;
t.teardown(async () => {
  const left = await docker.listContainers({ all: true, filters: { label: [`vp.host=${host}`] } });
  await Promise.all(left.map(({ Id }) => docker.getContainer(Id).remove({ force: true })));
  rmSync(workRoot, { recursive: true, force: true });
});

const runtime = (options: Partial<DockerRuntimeOptions> = {}) =>
  new DockerRuntime({ workRoot, host, defaultImage: image, stopGraceMs: 1000, ...options });

function spec(script: string, extra: Partial<JobSpec> = {}): JobSpec {
  return { command: ['sh', '-c', script], env: {}, workDir: 'job', gpus: { count: 0 }, ...extra };
}

let jobs = 0;
function assignment(jobSpec: JobSpec): JobAssignment {
  return { jobId: `j${++jobs}-${suffix}`, attempt: 1, spec: jobSpec };
}

function collector() {
  const batches: Array<{ stream: LogStream; lines: string[] }> = [];
  const sink: LogSink = (batch) => batches.push(batch);
  const lines = (stream: LogStream) => batches.filter((b) => b.stream === stream).flatMap((b) => b.lines);
  return { sink, lines };
}

async function run(jobSpec: JobSpec, from = runtime()) {
  const logs = collector();
  const job = await from.start(assignment(jobSpec), logs.sink);
  const outcome = await job.wait();
  await job.release();
  return { ...logs, job, outcome };
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting after ${ms} ms: ${what}`);
    await sleep(50);
  }
}

/** Starts a job that prints "up", once that line has arrived. */
async function startUp(jobSpec: JobSpec, from = runtime()) {
  const logs = collector();
  const assigned = assignment(jobSpec);
  const job = await from.start(assigned, logs.sink);
  await until(() => logs.lines('stdout').includes('up'), 'the job to print "up"');
  return { ...logs, job, assigned, container: docker.getContainer(containerName(assigned.jobId, assigned.attempt)) };
}

async function isGone(jobId: string, attempt = 1): Promise<boolean> {
  return docker
    .getContainer(containerName(jobId, attempt))
    .inspect()
    .then(
      () => false,
      (error: { statusCode?: number }) => error.statusCode === 404,
    );
}

t.test(
  'exit 0 completes; stdout and stderr arrive apart, in order; the container is removed once the end is reported',
  async (t) => {
    const logs = collector();
    const assigned = assignment(spec('echo out 1; echo err 1 >&2; echo out 2; printf partial'));
    const job = await runtime().start(assigned, logs.sink);
    const outcome = await job.wait();
    t.same(withoutTimes(outcome), { outcome: 'completed' });
    // Docker may not have recorded the finish yet when the exit is seen: then the agent measures the end itself.
    // (Docker's two clocks may put a run this short's finish a millisecond before its start: the agent counts that as 0 s.)
    t.ok(
      outcome.startedAt! > 0 &&
        (outcome.endedAt === undefined || Math.abs(outcome.endedAt - outcome.startedAt!) < 10_000),
      `the run's times as Docker measured them: ${JSON.stringify(outcome)}`,
    );
    t.same(logs.lines('stdout'), ['out 1', 'out 2', 'partial']);
    t.same(logs.lines('stderr'), ['err 1']);
    t.notOk(await isGone(assigned.jobId), 'kept until its end is reported, so a restarted agent could still report it');
    await job.release();
    t.ok(await isGone(assigned.jobId));
  },
);

t.test("a non-zero exit fails with the exit code and the output's last error line", async (t) => {
  const { outcome } = await run(spec('exit 3'));
  t.same(withoutTimes(outcome), { outcome: 'failed', exitCode: 3, error: 'exited with status 3' });
  const said = await run(spec('echo "ValueError: no $(pwd)/data.yaml" >&2; echo bye; exit 2'));
  t.same(withoutTimes(said.outcome), {
    outcome: 'failed',
    exitCode: 2,
    error: 'exited with status 2: ValueError: no data.yaml',
  });
});

t.test(
  'the work dir is mounted at its host path and is the working dir; paths outside the work root are refused',
  async (t) => {
    const { outcome, lines } = await run(spec('pwd; echo written > out.txt', { workDir: 'a/b' }));
    t.same(withoutTimes(outcome), { outcome: 'completed' });
    t.same(lines('stdout'), [join(workRoot, 'a', 'b')]);
    t.equal(readFileSync(join(workRoot, 'a', 'b', 'out.txt'), 'utf8'), 'written\n');
    await t.rejects(run(spec('true', { workDir: '../escape' })), /outside the work root/);
    await t.rejects(run(spec('true', { workDir: '.vp-jobs/x' })), /outside the work root/);
  },
);

t.test(
  'limits, labels, name, mount and environment are set as the spec says (seen while it runs); no twin of an attempt',
  async (t) => {
    const MiB = 2 ** 20;
    const jobSpec = spec('echo up; sleep 60', {
      env: { FOO: 'bar' },
      memoryBytes: 64 * MiB,
      cpus: 0.5,
      shmBytes: 32 * MiB,
      timeoutSeconds: 600,
    });
    const { job, assigned, container } = await startUp(jobSpec);
    const info = await container.inspect();
    t.equal(info.State.Running, true);
    t.match(info.HostConfig, {
      Memory: 64 * MiB,
      MemorySwap: 64 * MiB,
      NanoCpus: 500_000_000,
      ShmSize: 32 * MiB,
      Init: true,
      NetworkMode: JOB_NETWORK,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
    });
    t.equal(info.Config.User, `${jobUser().uid}:${jobUser().gid}`);
    t.same(info.Config.Labels, {
      'vp.managed': 'true',
      'vp.host': host,
      'vp.job-id': assigned.jobId,
      'vp.attempt': '1',
      'vp.timeout-seconds': '600',
      'vp.job-files': JSON.stringify({ workDir: 'job' }),
    });
    t.equal(info.Name, `/vp-job-${assigned.jobId}-1`);
    t.equal(info.Config.WorkingDir, join(workRoot, 'job'));
    t.same(info.Config.Cmd, jobSpec.command);
    t.ok(
      info.Config.Env.includes('FOO=bar') && info.Config.Env.includes('NVIDIA_VISIBLE_DEVICES=void'),
      info.Config.Env.join(' '),
    );
    t.match(info.Mounts, [{ Type: 'bind', Source: join(workRoot, 'job'), Destination: join(workRoot, 'job') }]);
    await t.rejects(
      runtime().start(assigned, () => {}),
      /already has a container/,
    );
    await job.stop('done looking');
    await job.release();
  },
);

t.test(
  "a job's container runs unprivileged: not root, no capabilities, no other job's files, not on the host's network",
  async (t) => {
    const first = await run(
      spec('echo "first job\'s data" > secret.txt; cat /proc/self/status /proc/net/dev', { workDir: 'isolated/first' }),
    );
    t.same(withoutTimes(first.outcome), { outcome: 'completed' }, first.lines('stderr').join('\n'));
    const status = (name: string) =>
      first
        .lines('stdout')
        .find((line) => line.startsWith(`${name}:`))
        ?.split(/\s+/)
        .slice(1);
    const { uid, gid } = jobUser();
    t.not(uid, 0);
    t.same(status('Uid'), [uid, uid, uid, uid].map(String), 'its user: the unprivileged job user');
    t.same(status('Gid'), [gid, gid, gid, gid].map(String));
    for (const set of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
      t.equal(status(set)?.[0], '0000000000000000', `${set}: no capability`);
    t.same(status('NoNewPrivs'), ['1'], 'no-new-privileges');
    // /proc/net/dev lists the interfaces of the network namespace: the host's bridges are not in the container's.
    const interfaces = (lines: readonly string[]) =>
      lines.filter((line) => /^\s*[\w.@-]+:\s+\d/.test(line)).map((line) => line.split(':')[0]!.trim());
    const own = interfaces(first.lines('stdout'));
    const hostOnly = interfaces(readFileSync('/proc/net/dev', 'utf8').split('\n')).filter(
      (name) => !own.includes(name),
    );
    t.ok(
      own.includes('lo') && hostOnly.length > 0,
      `a network namespace of its own (${own.join(', ')}), not the host's`,
    );
    const network = await docker.getNetwork(JOB_NETWORK).inspect();
    t.equal(
      network.Options?.['com.docker.network.bridge.enable_icc'],
      'false',
      'containers on the job network cannot reach one another',
    );

    const secret = join(workRoot, 'isolated', 'first', 'secret.txt');
    t.equal(readFileSync(secret, 'utf8'), "first job's data\n");
    const second = await run(
      spec(
        `cat ${secret} || echo "not there"; cat /proc/1/root${secret} || echo "not there either"; echo mine > own.txt`,
        { workDir: 'isolated/second' },
      ),
    );
    t.same(withoutTimes(second.outcome), { outcome: 'completed' });
    t.same(second.lines('stdout'), ['not there', 'not there either'], "another job's work dir is not in its container");
    t.equal(
      readFileSync(join(workRoot, 'isolated', 'second', 'own.txt'), 'utf8'),
      'mine\n',
      'its own work dir is writable to it',
    );
  },
);

t.test('stop() cancels: the job gets SIGTERM, the container is stopped and removed', async (t) => {
  const { job, assigned } = await startUp(spec('echo up; sleep 60'), runtime({ stopGraceMs: 10_000 }));
  const started = Date.now();
  await job.stop('user asked');
  t.ok(Date.now() - started < 5000, 'well within the grace: the job ended on SIGTERM');
  t.same(withoutTimes(await job.wait()), { outcome: 'cancelled', error: 'user asked' });
  await job.release();
  t.ok(await isGone(assigned.jobId));
  await job.stop('again'); // nothing to do once it has ended
});

t.test('a job ignoring SIGTERM is killed after the grace period', async (t) => {
  const { job } = await startUp(spec('trap "" TERM; echo up; while true; do sleep 0.1; done'));
  const started = Date.now();
  await job.stop('user asked');
  const took = Date.now() - started;
  t.ok(took >= 900 && took < 5000, `took ${took} ms`);
  t.equal((await job.wait()).outcome, 'cancelled');
  await job.release();
});

t.test('a timeout fails the job with "timed out"', async (t) => {
  const started = Date.now();
  const { outcome } = await run(spec('sleep 60', { timeoutSeconds: 1 }));
  t.same(withoutTimes(outcome), { outcome: 'failed', error: 'timed out' });
  t.ok(Date.now() - started < 5000);
});

t.test('a job over its memory limit fails as out of memory', async (t) => {
  const limit = 16 * 2 ** 20;
  const { outcome } = await run({
    ...spec(''),
    command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=64M', 'count=1'],
    memoryBytes: limit,
  });
  // Docker marks it OOMKilled where the kernel's OOM event reaches dockerd; where it does not (nested cgroups), the
  // SIGKILL under the limit is still reported as memory, with the limit.
  t.match(withoutTimes(outcome), { outcome: 'failed', exitCode: 137 });
  t.match(
    outcome.error,
    new RegExp(`^killed( \\(SIGKILL\\), most likely)? for running out of memory \\(its limit is ${limit} bytes\\)$`),
  );
});

t.test(
  'an image that is neither named nor configured, or not here and not pullable, fails the start clearly',
  async (t) => {
    await t.rejects(
      run(spec('true'), runtime({ defaultImage: undefined })),
      /names no image and this agent has no trainer image/,
    );
    const absent = assignment(spec('true', { image: `vp-test/absent:${suffix}` }));
    await t.rejects(
      runtime().start(absent, () => {}),
      new RegExp(`image ${absent.spec.image} is not on this host and could not be pulled`),
    );
    t.ok(await isGone(absent.jobId), 'no container was made');
  },
);

t.test('GPUs are requested from the NVIDIA driver by index, and NVIDIA_VISIBLE_DEVICES matches', async (t) => {
  const context = { image, workDir: '/w/job', host };
  const options = (gpus: JobSpec['gpus']) =>
    containerOptions({ jobId: 'j:1_a', attempt: 2, spec: spec('true', { gpus }) }, context);
  const two = options({ count: 2, indexes: [0, 1] });
  t.same(two.HostConfig?.DeviceRequests, [{ Driver: 'nvidia', DeviceIDs: ['0', '1'], Capabilities: [['gpu']] }]);
  t.ok(two.Env?.includes('NVIDIA_VISIBLE_DEVICES=0,1'));
  t.equal(two.name, 'vp-job-j_x1__a-2');
  const any = options({ count: 1 });
  t.same(any.HostConfig?.DeviceRequests, [{ Driver: 'nvidia', Count: 1, Capabilities: [['gpu']] }]);
  t.notOk(
    any.Env?.some((entry) => entry.startsWith('NVIDIA_VISIBLE_DEVICES=')),
    'Docker sets it for a count',
  );
  const none = options({ count: 0 });
  t.equal(none.HostConfig?.DeviceRequests, undefined);
  t.ok(none.Env?.includes('NVIDIA_VISIBLE_DEVICES=void'));
});

t.test('recover() after the agent was killed adopts running containers and reports ended ones', async (t) => {
  const checkpoint = { under: 'runs', file: 'last.pt', everySeconds: 5 };
  const ticking = assignment(spec('i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done', { checkpoint }));
  // Ends after its agent is gone, so nobody sees it end.
  const exiting = assignment(spec('sleep 1; echo "RuntimeError: no $(pwd)/data.yaml" >&2; exit 4'));
  const timed = assignment(spec('sleep 60', { timeoutSeconds: 3 }));
  // An agent in a process of its own, killed once its jobs run, as a crash or a reboot of the agent would.
  const runtimeModule = new URL('../worker-agent/src/runtimes/docker-runtime.ts', import.meta.url).href;
  const agent = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { DockerRuntime } = await import(${JSON.stringify(runtimeModule)});
       const runtime = new DockerRuntime(${JSON.stringify({ workRoot, host, defaultImage: image })});
       for (const assigned of ${JSON.stringify([ticking, exiting, timed])}) await runtime.start(assigned, () => {});
       console.log('started'); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let agentOutput = '';
  agent.stdout.on('data', (chunk: Buffer) => (agentOutput += chunk));
  await until(() => agentOutput.includes('started'), 'the first agent to start its jobs', 20_000);
  agent.kill('SIGKILL');
  const exited = docker.getContainer(containerName(exiting.jobId, 1));
  await until(async () => !(await exited.inspect()).State.Running, 'the exiting job to end');

  t.same(
    await runtime({ host: `another-${suffix}` }).recover(() => () => {}),
    [],
    "another agent's containers are not ours",
  );
  const sinks = new Map<string, ReturnType<typeof collector>>();
  const recovered = await runtime().recover((jobId) => {
    const logs = collector();
    sinks.set(jobId, logs);
    return logs.sink;
  });
  const byId = new Map(recovered.map((found) => [found.jobId, found]));
  t.same(
    byId.get(ticking.jobId)?.files,
    { workDir: ticking.spec.workDir, checkpoint },
    'an adopted job keeps what its checkpoint uploads need',
  );
  t.same(byId.get(timed.jobId)?.files, { workDir: timed.spec.workDir }, 'a job without a checkpoint: its work dir');
  t.same([...byId.keys()].sort(), [ticking.jobId, exiting.jobId, timed.jobId].sort());
  t.ok(recovered.every((found) => found.attempt === 1));

  t.same(
    withoutTimes(await byId.get(exiting.jobId)?.job.wait()),
    { outcome: 'failed', exitCode: 4, error: 'exited with status 4: RuntimeError: no data.yaml' },
    'the cause from the output Docker kept',
  );
  await byId.get(exiting.jobId)?.job.release();
  t.ok(await isGone(exiting.jobId), 'the ended container is removed once its end is reported');

  const tickLogs = sinks.get(ticking.jobId) as ReturnType<typeof collector>;
  await until(() => tickLogs.lines('stdout').some((line) => line.startsWith('tick ')), 'ticks from the adopted job');
  const tickJob = byId.get(ticking.jobId)?.job;
  await tickJob?.stop('stopped after recovery');
  t.same(withoutTimes(await tickJob?.wait()), { outcome: 'cancelled', error: 'stopped after recovery' });
  await tickJob?.release();
  t.ok(await isGone(ticking.jobId));

  t.same(
    withoutTimes(await byId.get(timed.jobId)?.job.wait()),
    { outcome: 'failed', error: 'timed out' },
    'the timeout still counts from its start',
  );
  await byId.get(timed.jobId)?.job.release();
  t.ok(await isGone(timed.jobId));
});

t.test(
  'the exporter probe runs in the trainer image and its container is removed; an image without it, or none, gives no exporters',
  async (t) => {
    const answer = { exporters: ['onnx', 'torchscript'], missing: { engine: 'TensorRT needs an NVIDIA GPU' } };
    const context = t.testdir({
      Dockerfile: `FROM ${image}\nCOPY vp-probe-exporters /bin/vp-probe-exporters\n`,
      'vp-probe-exporters': `#!/bin/sh\necho '${JSON.stringify(answer)}'\n`,
    });
    chmodSync(join(context, 'vp-probe-exporters'), 0o755);
    const probeImage = `vp-test/probe:${suffix}`;
    const build = await docker.buildImage({ context, src: ['Dockerfile', 'vp-probe-exporters'] }, { t: probeImage });
    await new Promise<void>((done, fail) =>
      docker.modem.followProgress(build, (error) => (error ? fail(error) : done())),
    );
    t.teardown(() =>
      docker
        .getImage(probeImage)
        .remove({ force: true })
        .catch(() => {}),
    );

    const logs: string[] = [];
    const log: Logger = (level, msg, fields) => logs.push(`${level} ${msg} ${JSON.stringify(fields)}`);
    t.same(await probeExporters(() => runtime({ defaultImage: probeImage }).runExporterProbe(), log), {
      exporters: answer.exporters,
      missingExporters: answer.missing,
    });
    t.same(
      await docker.listContainers({ all: true, filters: { ancestor: [probeImage] } }),
      [],
      'its container is gone',
    );

    t.same(
      await probeExporters(() => runtime().runExporterProbe(), log),
      { exporters: [], missingExporters: {} },
      'an image without the probe',
    );
    t.same(
      await probeExporters(() => runtime({ defaultImage: undefined }).runExporterProbe(), log),
      { exporters: [], missingExporters: {} },
      'no trainer image',
    );
    t.match(logs.slice(1), [/^warn no exporters/, /^warn no exporters.*no trainer image configured/]);
  },
);
