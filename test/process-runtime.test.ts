// The process runtime against real child processes (node -e scripts): outcomes, logs, environment, work dirs,
// stopping (a process group, SIGKILL after the grace), timeouts, failure causes, and recover() after the agent died
// mid-job: the job runs on and is adopted; the job manager on it replacing an attempt with a newer one.
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { AgentMessage, JobSpec } from '@vp/protocol';
import { loadWorkerConfig } from '../worker-agent/src/config.ts';
import { JobManager } from '../worker-agent/src/job-manager.ts';
import { runtimeFromConfig } from '../worker-agent/src/runtime-from-config.ts';
import { STATE_FILES } from '../worker-agent/src/runtimes/process-job-state.ts';
import { ProcessRuntime } from '../worker-agent/src/runtimes/process-runtime.ts';
import type { LogSink, LogStream } from '../worker-agent/src/runtimes/runtime.ts';
import { eventually } from './helpers/host-jobs.ts';
import { withoutTimes } from './helpers/job-outcomes.ts';

const workRoot = mkdtempSync(join(tmpdir(), 'vp-process-runtime-'));
t.teardown(() => rmSync(workRoot, { recursive: true, force: true }));

function spec(script: string, extra: Partial<JobSpec> = {}): JobSpec {
  return { command: [process.execPath, '-e', script], env: {}, workDir: 'job', gpus: { count: 0 }, ...extra };
}

function collector() {
  const batches: Array<{ stream: LogStream; lines: string[] }> = [];
  const sink: LogSink = (batch) => batches.push(batch);
  const lines = (stream: LogStream) => batches.filter((b) => b.stream === stream).flatMap((b) => b.lines);
  return { batches, sink, lines };
}

async function run(jobSpec: JobSpec, runtime = new ProcessRuntime({ workRoot })) {
  const logs = collector();
  const job = await runtime.start({ jobId: 'j1', attempt: 1, spec: jobSpec }, logs.sink);
  return { ...logs, job, outcome: await job.wait() };
}

/** Gone, or a zombie nobody has reaped yet. */
function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

async function firstLine(logs: ReturnType<typeof collector>): Promise<string> {
  for (let i = 0; i < 100 && logs.lines('stdout').length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  return logs.lines('stdout')[0] as string;
}

t.test('exit 0 completes with stdout lines in order', async (t) => {
  const { outcome, lines } = await run(spec('for (let i = 1; i <= 3; i++) console.log("line " + i)'));
  t.same(withoutTimes(outcome), { outcome: 'completed' });
  t.ok(
    outcome.startedAt! > 0 && outcome.startedAt! <= outcome.endedAt!,
    "the run's start and end as the runtime measured them",
  );
  t.same(lines('stdout'), ['line 1', 'line 2', 'line 3']);
});

t.test('non-zero exit fails with the exit code; stderr is routed as stderr', async (t) => {
  const { outcome, lines } = await run(spec('console.error("bad thing"); process.exit(3)'));
  t.equal(outcome.outcome, 'failed');
  t.equal(outcome.exitCode, 3);
  t.same(lines('stderr'), ['bad thing']);
  t.same(lines('stdout'), []);
});

t.test('a last line without a newline is delivered', async (t) => {
  const { lines } = await run(spec('process.stdout.write("a\\nb\\r\\npartial")'));
  t.same(lines('stdout'), ['a', 'b', 'partial']);
});

t.test('over-long lines are truncated to the protocol limit', async (t) => {
  const { lines } = await run(spec('console.log("x".repeat(100000)); console.log("next")'));
  const [long, next] = lines('stdout') as [string, string];
  t.ok(Buffer.byteLength(long) <= 16 * 1024);
  t.match(long, /^x+…\[truncated\]$/);
  t.equal(next, 'next');
});

t.test('5,000 quick lines arrive in batches of at most 1,000', async (t) => {
  const { outcome, batches, lines } = await run(spec('for (let i = 0; i < 5000; i++) console.log(i)'));
  t.same(withoutTimes(outcome), { outcome: 'completed' });
  t.same(
    lines('stdout'),
    Array.from({ length: 5000 }, (_, i) => String(i)),
  );
  t.ok(batches.length >= 5 && batches.length < 100, `${batches.length} batches`);
  t.ok(batches.every((b) => b.lines.length <= 1000));
});

t.test('CUDA_VISIBLE_DEVICES follows the assigned GPUs; empty without GPUs', async (t) => {
  const script = 'console.log(JSON.stringify(process.env.CUDA_VISIBLE_DEVICES))';
  t.same((await run(spec(script, { gpus: { count: 2, indexes: [1, 3] } }))).lines('stdout'), ['"1,3"']);
  t.same((await run(spec(script))).lines('stdout'), ['""']);
});

t.test("the environment is the configured one, the job's own home, and the spec", async (t) => {
  const runtime = new ProcessRuntime({ workRoot, environment: { BASE: 'b', SHARED: 'base' } });
  const script = 'const e = process.env; console.log([e.BASE, e.SHARED, e.OWN, e.HOME].join(" "))';
  const { lines } = await run(spec(script, { env: { SHARED: 'job', OWN: 'o' } }), runtime);
  t.same(lines('stdout'), [`b job o ${join(workRoot, 'job', '.home')}`]);
});

t.test("a job sees none of the agent's settings or secrets: its environment is built from an allowlist", async (t) => {
  const dir = t.testdir({ venv: { bin: {} } });
  const secrets = {
    VP_WORKER_KEY: `vpw_${'7'.repeat(48)}`,
    VP_WORKER_SERVER: 'http://127.0.0.1:9',
    VP_ADMIN_KEY: 'vp-admin-secret',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    HTTPS_PROXY: 'http://user:pw@proxy:3128',
  };
  const saved = Object.fromEntries(Object.keys(secrets).map((name) => [name, process.env[name]]));
  Object.assign(process.env, secrets);
  t.teardown(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  // What an older agent left: one settings copy for every job, a workspace's dataset cached in it.
  mkdirSync(join(dir, 'work', '.yolo-config', 'datasets', 'theirs'), { recursive: true });
  // As the agent builds it: its settings from the environment, its runtime from them.
  const config = loadWorkerConfig({
    ...process.env,
    XDG_CONFIG_HOME: dir,
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(dir, 'work'),
    VP_WORKER_PROCESS_VENV: join(dir, 'venv'),
  });
  const { lines } = await run(
    spec('console.log(JSON.stringify(process.env))', { env: { ULTRALYTICS_API_KEY: 'the-jobs-own' } }),
    runtimeFromConfig(config) as ProcessRuntime,
  );
  const env = JSON.parse(lines('stdout')[0] as string) as Record<string, string>;
  t.same(
    Object.keys(env).filter((name) => name.startsWith('VP_')),
    [],
    'no VP_* setting',
  );
  t.notOk(
    Object.values(env).some((value) => Object.values(secrets).some((secret) => value.includes(secret))),
    'no secret of the agent, under any name',
  );
  t.equal(env.ULTRALYTICS_API_KEY, 'the-jobs-own', "the spec's own environment");
  t.equal(env.PATH?.split(':')[0], join(dir, 'venv', 'bin'), "the trainer's Python first on PATH");
  t.equal(env.PATH?.split(':')[1], process.env.PATH?.split(':')[0], "then the agent's PATH");
  t.notOk(
    existsSync(join(dir, 'work', '.yolo-config')),
    'the shared settings copy of older agents is gone, with what they cached',
  );
});

t.test(
  'each job gets its own home and ultralytics settings in its work dir: nothing one job writes there is left for another',
  async (t) => {
    const dir = t.testdir({
      venv: {
        'yolo-config': {
          Ultralytics: {
            'settings.json': JSON.stringify({
              sync: false,
              datasets_dir: '/shared/datasets',
              weights_dir: '/shared/weights',
            }),
            'Arial.ttf': 'font',
          },
          datasets: { 'cached.txt': 'from an earlier job' },
        },
      },
    });
    const venv = join(dir, 'venv');
    const runtime = new ProcessRuntime({ workRoot, venv, environment: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });
    const script = (name: string) => `const fs = require("node:fs"), path = require("node:path"), e = process.env;
    const settings = JSON.parse(fs.readFileSync(path.join(e.YOLO_CONFIG_DIR, "Ultralytics", "settings.json"), "utf8"));
    fs.mkdirSync(settings.datasets_dir, { recursive: true });
    const seen = fs.readdirSync(settings.datasets_dir);
    fs.writeFileSync(path.join(settings.datasets_dir, "${name}.txt"), "a workspace's data");
    fs.writeFileSync(path.join(e.HOME, "${name}.pt"), "weights");
    console.log(JSON.stringify({ config: e.YOLO_CONFIG_DIR, home: e.HOME, tmp: e.TMPDIR, cache: e.XDG_CACHE_HOME, mpl: e.MPLCONFIGDIR, settings, seen,
      font: fs.existsSync(path.join(e.YOLO_CONFIG_DIR, "Ultralytics", "Arial.ttf")) }))`;
    /** What the script prints: the job's folders, the settings it runs with, what its dataset folder held. */
    type Seen = Record<'config' | 'home' | 'tmp' | 'cache' | 'mpl', string> & {
      settings: unknown;
      seen: string[];
      font: boolean;
    };
    const first = JSON.parse(
      (await run(spec(script('first'), { workDir: 'homes/a' }), runtime)).lines('stdout')[0] as string,
    ) as Seen;
    const second = JSON.parse(
      (await run(spec(script('second'), { workDir: 'homes/b' }), runtime)).lines('stdout')[0] as string,
    ) as Seen;
    const a = join(workRoot, 'homes', 'a');
    const b = join(workRoot, 'homes', 'b');
    t.match(first, {
      config: join(a, '.home', 'yolo-config'),
      home: join(a, '.home'),
      tmp: join(a, '.home', 'tmp'),
      cache: join(a, '.home', '.cache'),
      mpl: join(a, '.home', 'yolo-config', 'matplotlib'),
    });
    t.match(second, { config: join(b, '.home', 'yolo-config'), home: join(b, '.home') });
    t.same(
      first.settings,
      {
        sync: false,
        datasets_dir: join(a, '.home', 'yolo-config', 'datasets'),
        weights_dir: join(a, '.home', 'yolo-config', 'weights'),
      },
      "the venv's settings, with its own dataset and weights folders",
    );
    t.equal(first.font, true, 'the fonts come along');
    t.same(first.seen, [], 'no dataset cached in the venv reaches a job');
    t.same(second.seen, [], "nothing of the first job's is in the second's dataset folder");
    t.notOk(existsSync(join(b, '.home', 'first.pt')));
    t.same(
      readdirSync(join(venv, 'yolo-config', 'datasets')),
      ['cached.txt'],
      "nothing is written to the venv's settings",
    );
  },
);

t.test('the job runs in its work dir, created under the work root; ../ is refused', async (t) => {
  const { lines } = await run(spec('console.log(process.cwd())', { workDir: 'a/b' }));
  t.same(lines('stdout'), [join(workRoot, 'a', 'b')]);
  t.ok(statSync(join(workRoot, 'a', 'b')).isDirectory());
  await t.rejects(run(spec('', { workDir: '../escape' })), /outside the work root/);
  await t.rejects(run(spec('', { workDir: '.' })), /outside the work root/);
});

t.test('stop() cancels a long-running job quickly', async (t) => {
  const logs = collector();
  const job = await new ProcessRuntime({ workRoot }).start(
    { jobId: 'j1', attempt: 1, spec: spec('console.log("up"); setInterval(() => {}, 1000)') },
    logs.sink,
  );
  await firstLine(logs);
  const started = Date.now();
  await job.stop('user asked');
  t.ok(Date.now() - started < 2000);
  t.same(withoutTimes(await job.wait()), { outcome: 'cancelled', error: 'user asked' });
  await job.stop('again'); // no-op once ended
});

t.test('a job ignoring SIGTERM is killed after the grace period', async (t) => {
  const logs = collector();
  const script = 'process.on("SIGTERM", () => {}); console.log("up"); setInterval(() => {}, 1000)';
  const job = await new ProcessRuntime({ workRoot, stopGraceMs: 300 }).start(
    { jobId: 'j1', attempt: 1, spec: spec(script) },
    logs.sink,
  );
  await firstLine(logs);
  const started = Date.now();
  await job.stop('user asked');
  const took = Date.now() - started;
  t.ok(took >= 250 && took < 3000, `took ${took} ms`);
  t.equal((await job.wait()).outcome, 'cancelled');
});

t.test('stopping kills the grandchildren too (process group)', async (t) => {
  const script = `const c = require("node:child_process").spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    console.log(c.pid); setInterval(() => {}, 1000)`;
  const logs = collector();
  const job = await new ProcessRuntime({ workRoot }).start({ jobId: 'j1', attempt: 1, spec: spec(script) }, logs.sink);
  const grandchild = Number(await firstLine(logs));
  t.ok(isAlive(grandchild));
  await job.stop('bye');
  for (let i = 0; i < 40 && isAlive(grandchild); i++) await new Promise((r) => setTimeout(r, 50));
  t.notOk(isAlive(grandchild));
});

t.test('a timeout fails the job with "timed out"', async (t) => {
  const started = Date.now();
  const { outcome } = await run(spec('setInterval(() => {}, 1000)', { timeoutSeconds: 1 }));
  t.same(withoutTimes(outcome), { outcome: 'failed', error: 'timed out' });
  t.ok(Date.now() - started < 3000);
});

t.test('a full disk while a job runs: the job is neither lost nor ended without its exit status', async (t) => {
  const jobId = 'full-disk';
  const stateDir = join(workRoot, '.vp-jobs', 'process', jobId);
  const go = join(workRoot, 'full-disk-go');
  const logs = collector();
  const script = `console.log("before");
    const wait = () => require("fs").existsSync(${JSON.stringify(go)}) ? console.log("after") : setTimeout(wait, 50);
    wait();`;
  const job = await new ProcessRuntime({ workRoot }).start({ jobId, attempt: 1, spec: spec(script) }, logs.sink);
  // Nothing can be written in its state dir: each record's temporary name is taken (as a write fails on a full disk).
  for (const name of [STATE_FILES.delivered, STATE_FILES.exit]) mkdirSync(join(stateDir, `${name}.tmp`));
  await eventually(async () => logs.lines('stdout').includes('before'), 'the output delivered without its record');
  writeFileSync(go, '');
  // Space comes back a while after the job exited: its supervisor records the exit status then.
  setTimeout(() => rmSync(join(stateDir, `${STATE_FILES.exit}.tmp`), { recursive: true }), 1500);
  t.same(withoutTimes(await job.wait()), { outcome: 'completed' });
  t.same(logs.lines('stdout'), ['before', 'after']);
  await job.release();
});

t.test('a missing command fails with a message', async (t) => {
  const { outcome } = await run({ ...spec(''), command: ['vp-no-such-command-xyz'] });
  t.equal(outcome.outcome, 'failed');
  t.match(outcome.error, /ENOENT/);
});

t.test("a non-zero exit says why: its output's last error line, without keys or host paths", async (t) => {
  const key = 'ul_' + '5'.repeat(40);
  const script = `console.log("Traceback (most recent call last):");
    console.error('  File "/opt/venv/lib/python3.11/site-packages/ultralytics/utils/checks.py", line 814, in check_file');
    console.error("\\x1b[31mFileNotFoundError: '" + process.cwd() + "/runs/yolo99z.yaml' does not exist (key " + process.env.ULTRALYTICS_API_KEY + ")\\x1b[0m");
    console.log("Sentry: nothing sent");
    process.exit(1)`;
  const { outcome } = await run(spec(script, { env: { ULTRALYTICS_API_KEY: key } }));
  t.same(withoutTimes(outcome), {
    outcome: 'failed',
    exitCode: 1,
    error: "exited with status 1: FileNotFoundError: 'runs/yolo99z.yaml' does not exist (key [redacted])",
  });
  const plain = await run(spec('console.error("out of luck at /srv/data/x.bin"); process.exit(2)'));
  t.equal(
    plain.outcome.error,
    'exited with status 2: out of luck at x.bin',
    'else the last line, its outside path cut to its name',
  );
});

t.test("a job's state stays until its end is released; the agent state dir is no work dir", async (t) => {
  const { job } = await run(spec('console.log("hi")'));
  t.same(readdirSync(join(workRoot, '.vp-jobs', 'process')), ['j1']);
  await job.release();
  t.same(readdirSync(join(workRoot, '.vp-jobs', 'process')), []);
  await t.rejects(run(spec('', { workDir: '.vp-jobs/x' })), /outside the work root/);
});

/** Waits for a path to exist. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`still waiting after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A job that prints `<name> 1`, then waits for a file `go` in its work dir, then prints `<name> 2` and `<name> 3` and exits with `code`. */
const gated = (name: string, code: number) =>
  spec(
    `const fs = require("node:fs"); console.log("${name} 1");
     const wait = setInterval(() => { if (!fs.existsSync("go")) return; clearInterval(wait); console.log("${name} 2"); console.error("${name} 3"); process.exit(${code}); }, 20)`,
    { workDir: `gated/${name}` },
  );

t.test(
  'an agent killed mid-job: the jobs run on; a new agent adopts them, sends only the output not yet sent, and reports how they really ended',
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
    t.teardown(() => rmSync(root, { recursive: true, force: true }));
    const runtimeModule = new URL('../worker-agent/src/runtimes/process-runtime.ts', import.meta.url).href;
    const assignments = [
      { jobId: 'j-done', attempt: 2, spec: gated('done', 0) },
      { jobId: 'j-failed', attempt: 1, spec: gated('failed', 3) },
      { jobId: 'j-running', attempt: 1, spec: gated('running', 0) },
    ];
    // The first agent, in a process of its own: it starts the jobs and prints each batch of output it sends.
    const agent = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { ProcessRuntime } = await import(${JSON.stringify(runtimeModule)});
       const runtime = new ProcessRuntime({ workRoot: ${JSON.stringify(root)} });
       for (const assigned of ${JSON.stringify(assignments)}) await runtime.start(assigned, (batch) => console.log(JSON.stringify(batch)));
       setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let sent = '';
    agent.stdout.on('data', (chunk: Buffer) => (sent += chunk));
    // An agent hands a batch on, then records how far it went: killed between the two, the next agent sends the batch
    // again (at least once, by design). Killed once both are done, nothing is sent twice.
    const recorded = (jobId: string) => {
      const file = join(root, '.vp-jobs', 'process', jobId, STATE_FILES.delivered);
      return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { stdout: number }).stdout > 0;
    };
    await until(
      () =>
        ['done 1', 'failed 1', 'running 1'].every((line) => sent.includes(line)) &&
        assignments.every(({ jobId }) => recorded(jobId)),
      'the first lines to be sent and recorded as sent',
    );
    agent.kill('SIGKILL');
    await new Promise((resolve) => agent.once('close', resolve));

    // Two jobs end while no agent runs; the third still runs when the next agent starts.
    const exitFile = (jobId: string) => join(root, '.vp-jobs', 'process', jobId, 'exit.json');
    writeFileSync(join(root, 'gated', 'done', 'go'), '');
    writeFileSync(join(root, 'gated', 'failed', 'go'), '');
    await until(() => existsSync(exitFile('j-done')) && existsSync(exitFile('j-failed')), 'the two jobs to end');
    t.notOk(existsSync(exitFile('j-running')), 'the third runs on');

    const sinks = new Map<string, ReturnType<typeof collector>>();
    const recovered = await new ProcessRuntime({ workRoot: root }).recover((jobId) => {
      const logs = collector();
      sinks.set(jobId, logs);
      return logs.sink;
    });
    const byId = new Map(recovered.map((found) => [found.jobId, found]));
    t.same([...byId.keys()].sort(), ['j-done', 'j-failed', 'j-running']);
    t.equal(byId.get('j-done')?.attempt, 2);
    t.same(byId.get('j-done')?.files, { workDir: 'gated/done' }, 'its work dir, for the sweep after it');

    t.same(withoutTimes(await byId.get('j-done')?.job.wait()), { outcome: 'completed' });
    t.same(
      [...sinks.get('j-done')!.lines('stdout'), ...sinks.get('j-done')!.lines('stderr')],
      ['done 2', 'done 3'],
      'only what was not sent before',
    );
    t.same(withoutTimes(await byId.get('j-failed')?.job.wait()), {
      outcome: 'failed',
      exitCode: 3,
      error: 'exited with status 3: failed 3',
    });

    const running = byId.get('j-running')!;
    writeFileSync(join(root, 'gated', 'running', 'go'), '');
    t.same(withoutTimes(await running.job.wait()), { outcome: 'completed' }, 'the adopted job is followed to its end');
    t.same(sinks.get('j-running')!.lines('stdout'), ['running 2']);

    for (const { job } of recovered) await job.release();
    t.same(
      await new ProcessRuntime({ workRoot: root }).recover(() => () => {}),
      [],
      'once released, nothing is reported twice',
    );
  },
);

t.test('an adopted job can be stopped: SIGTERM to its group, SIGKILL after the grace', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  // Leader and grandchild both ignore SIGTERM, so only the SIGKILL after the grace ends them.
  const script = `process.on("SIGTERM", () => {});
    const c = require("node:child_process").spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
    console.log(process.pid + " " + c.pid); setInterval(() => {}, 1000)`;
  const logs = collector();
  // The first agent started the job and went away (it stops following it, as at SIGTERM).
  const first = await new ProcessRuntime({ workRoot: root }).start(
    { jobId: 'j-lost', attempt: 2, spec: spec(script) },
    logs.sink,
  );
  const [leader, grandchild] = (await firstLine(logs)).split(' ').map(Number) as [number, number];
  first.detach();

  const [adopted] = await new ProcessRuntime({ workRoot: root, stopGraceMs: 300 }).recover(() => () => {});
  t.equal(adopted?.jobId, 'j-lost');
  const started = Date.now();
  await adopted?.job.stop('stopped after recovery');
  t.ok(Date.now() - started >= 250, 'waited the grace before SIGKILL');
  t.same(withoutTimes(await adopted?.job.wait()), { outcome: 'cancelled', error: 'stopped after recovery' });
  for (let i = 0; i < 40 && (isAlive(leader) || isAlive(grandchild)); i++) await new Promise((r) => setTimeout(r, 50));
  t.notOk(isAlive(leader), 'the job is gone');
  t.notOk(isAlive(grandchild), 'so is what it started');
});

t.test("an adopted job's timeout still counts from its start", async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const started = Date.now();
  const first = await new ProcessRuntime({ workRoot: root }).start(
    { jobId: 'j-slow', attempt: 1, spec: spec('setInterval(() => {}, 1000)', { timeoutSeconds: 2 }) },
    () => {},
  );
  first.detach();
  const [adopted] = await new ProcessRuntime({ workRoot: root, stopGraceMs: 300 }).recover(() => () => {});
  t.same(withoutTimes(await adopted?.job.wait()), { outcome: 'failed', error: 'timed out' });
  const took = Date.now() - started;
  t.ok(took >= 1900 && took < 5000, `ended ${took} ms after its start`);
});

t.test(
  'recover(): a job whose supervisor is gone without an exit status is failed, and a process that got its pid later is left alone',
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
    const stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
      detached: true,
      stdio: 'ignore',
    });
    t.teardown(() => {
      stranger.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    });
    for (const jobId of ['j-old', 'j-stopping']) {
      const dir = join(root, '.vp-jobs', 'process', jobId);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'job.json'),
        JSON.stringify({
          jobId,
          attempt: 1,
          pid: stranger.pid,
          startTime: '1',
          startedAt: Date.now(),
          files: { workDir: 'old' },
        }),
      );
    }
    // The earlier agent had begun to stop this one: the new one carries the stop on, but signals no stranger.
    writeFileSync(
      join(root, '.vp-jobs', 'process', 'j-stopping', 'stop.json'),
      JSON.stringify({ outcome: 'cancelled', error: 'by a user' }),
    );
    const byId = new Map(
      (await new ProcessRuntime({ workRoot: root, stopGraceMs: 300 }).recover(() => () => {})).map((found) => [
        found.jobId,
        found.job,
      ]),
    );
    t.same(withoutTimes(await byId.get('j-old')?.wait()), {
      outcome: 'failed',
      error: 'the process that watched the job ended without recording how the job ended',
    });
    t.same(withoutTimes(await byId.get('j-stopping')?.wait()), { outcome: 'cancelled', error: 'by a user' });
    await new Promise((r) => setTimeout(r, 500));
    t.ok(isAlive(stranger.pid as number), 'the other process still runs');
  },
);

t.test('recover() with nothing recorded finds nothing', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  t.same(await new ProcessRuntime({ workRoot: root }).recover(() => () => {}), []);
});

t.test(
  'a newer attempt of a job the agent still runs: the earlier stops, its end goes unreported (it would end the newer), then the newer starts',
  async (t) => {
    const messages: AgentMessage[] = [];
    const jobs = new JobManager(
      new ProcessRuntime({ workRoot }),
      () => {},
      (message) => messages.push(message) > 0,
    );
    const of = (type: AgentMessage['type']) => messages.filter((message) => message.type === type);
    const attempt = (n: number) =>
      ({
        type: 'job.assign',
        jobId: 'superseded',
        attempt: n,
        spec: spec(`console.log("attempt ${n}"); setInterval(() => {}, 1000)`, { workDir: 'superseded' }),
      }) as const;
    await jobs.assign(attempt(1));
    t.equal(of('job.accepted').length, 1);
    await jobs.assign(attempt(2));
    await eventually(async () => of('job.accepted').length === 2, 'the newer attempt to start');
    t.same(of('job.finished'), [], "the earlier attempt's end was not reported");
    t.same(jobs.known(), [{ jobId: 'superseded', attempt: 2, gpuIndexes: [] }], 'only the newer attempt is known');
    await eventually(
      async () => of('job.log').some((message) => message.type === 'job.log' && message.lines.includes('attempt 2')),
      "the newer attempt's output",
    );
    jobs.cancel({ type: 'job.cancel', jobId: 'superseded', reason: 'done' });
    await eventually(async () => of('job.finished').length === 1, 'the newer attempt to end when cancelled');
  },
);
