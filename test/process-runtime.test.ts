// The process runtime against real child processes (node -e scripts): outcomes, logs, environment, work dirs,
// stopping (a process group, SIGKILL after the grace), timeouts, and recover() after the agent died mid-job.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { JobSpec } from '@vp/protocol';
import { ProcessRuntime } from '../worker-agent/src/runtimes/process-runtime.ts';
import type { LogSink, LogStream } from '../worker-agent/src/runtimes/runtime.ts';

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
  t.same(outcome, { outcome: 'completed' });
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
  t.same(outcome, { outcome: 'completed' });
  t.same(lines('stdout'), Array.from({ length: 5000 }, (_, i) => String(i)));
  t.ok(batches.length >= 5 && batches.length < 100, `${batches.length} batches`);
  t.ok(batches.every((b) => b.lines.length <= 1000));
});

t.test('CUDA_VISIBLE_DEVICES follows the assigned GPUs; empty without GPUs', async (t) => {
  const script = 'console.log(JSON.stringify(process.env.CUDA_VISIBLE_DEVICES))';
  t.same((await run(spec(script, { gpus: { count: 2, indexes: [1, 3] } }))).lines('stdout'), ['"1,3"']);
  t.same((await run(spec(script))).lines('stdout'), ['""']);
});

t.test('the environment is the configured one plus the spec', async (t) => {
  const runtime = new ProcessRuntime({ workRoot, environment: { BASE: 'b', SHARED: 'base' } });
  const script = 'const e = process.env; console.log([e.BASE, e.SHARED, e.OWN, e.HOME === undefined].join(" "))';
  const { lines } = await run(spec(script, { env: { SHARED: 'job', OWN: 'o' } }), runtime);
  t.same(lines('stdout'), ['b job o true']);
});

t.test('the job runs in its work dir, created under the work root; ../ is refused', async (t) => {
  const { lines } = await run(spec('console.log(process.cwd())', { workDir: 'a/b' }));
  t.same(lines('stdout'), [join(workRoot, 'a', 'b')]);
  t.ok(statSync(join(workRoot, 'a', 'b')).isDirectory());
  await t.rejects(run(spec('', { workDir: '../escape' })), /outside the work root/);
  await t.rejects(run(spec('', { workDir: '.' })), /outside the work root/);
});

t.test('stop() cancels a long-running job quickly', async (t) => {
  const logs = collector();
  const job = await new ProcessRuntime({ workRoot }).start({ jobId: 'j1', attempt: 1, spec: spec('console.log("up"); setInterval(() => {}, 1000)') }, logs.sink);
  await firstLine(logs);
  const started = Date.now();
  await job.stop('user asked');
  t.ok(Date.now() - started < 2000);
  t.same(await job.wait(), { outcome: 'cancelled', error: 'user asked' });
  await job.stop('again'); // no-op once ended
});

t.test('a job ignoring SIGTERM is killed after the grace period', async (t) => {
  const logs = collector();
  const script = 'process.on("SIGTERM", () => {}); console.log("up"); setInterval(() => {}, 1000)';
  const job = await new ProcessRuntime({ workRoot, stopGraceMs: 300 }).start({ jobId: 'j1', attempt: 1, spec: spec(script) }, logs.sink);
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
  t.same(outcome, { outcome: 'failed', error: 'timed out' });
  t.ok(Date.now() - started < 3000);
});

t.test('a missing command fails with a message', async (t) => {
  const { outcome } = await run({ ...spec(''), command: ['vp-no-such-command-xyz'] });
  t.equal(outcome.outcome, 'failed');
  t.match(outcome.error, /ENOENT/);
});

t.test('a job that ends leaves no record behind; the agent state dir is no work dir', async (t) => {
  await run(spec('console.log("hi")'));
  t.same(readdirSync(join(workRoot, '.vp-jobs')), []);
  await t.rejects(run(spec('', { workDir: '.vp-jobs/x' })), /outside the work root/);
});

t.test('recover() after an agent died mid-job stops the job group and reports the job failed', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  // Leader and grandchild both ignore SIGTERM, so only the SIGKILL after the grace ends them.
  const script = `process.on("SIGTERM", () => {});
    const c = require("node:child_process").spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
    console.log(process.pid + " " + c.pid); setInterval(() => {}, 1000)`;
  const logs = collector();
  // The first agent: started the job, then went away without stopping it.
  await new ProcessRuntime({ workRoot: root }).start({ jobId: 'j-lost', attempt: 2, spec: spec(script) }, logs.sink);
  const [leader, grandchild] = (await firstLine(logs)).split(' ').map(Number) as [number, number];
  const record = JSON.parse(readFileSync(join(root, '.vp-jobs', 'j-lost.json'), 'utf8'));
  t.match(record, { jobId: 'j-lost', attempt: 2, pid: leader, startTime: /^\d+$/ });

  const started = Date.now();
  const recovered = await new ProcessRuntime({ workRoot: root, stopGraceMs: 300 }).recover();
  t.ok(Date.now() - started >= 250, 'waited the grace before SIGKILL');
  t.same(recovered.map(({ jobId, attempt }) => ({ jobId, attempt })), [{ jobId: 'j-lost', attempt: 2 }]);
  t.same(await recovered[0]?.job.wait(), { outcome: 'failed', error: 'the agent restarted while the job ran; its process was stopped' });
  for (let i = 0; i < 40 && (isAlive(leader) || isAlive(grandchild)); i++) await new Promise((r) => setTimeout(r, 50));
  t.notOk(isAlive(leader), 'the job is gone');
  t.notOk(isAlive(grandchild), 'so is what it started');
  t.same(readdirSync(join(root, '.vp-jobs')), [], 'the record is gone');
  t.same(await new ProcessRuntime({ workRoot: root }).recover(), [], 'and is not reported twice');
});

t.test('recover() leaves alone a process that got the recorded pid later', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  const stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' });
  t.teardown(() => {
    stranger.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });
  mkdirSync(join(root, '.vp-jobs'));
  writeFileSync(join(root, '.vp-jobs', 'j-old.json'), JSON.stringify({ jobId: 'j-old', attempt: 1, pid: stranger.pid, startTime: '1' }));
  const [recovered] = await new ProcessRuntime({ workRoot: root, stopGraceMs: 300 }).recover();
  t.same(await recovered?.job.wait(), { outcome: 'failed', error: 'the agent restarted while the job ran; its outcome is unknown' });
  t.ok(isAlive(stranger.pid as number), 'the other process still runs');
});

t.test('recover() with nothing recorded finds nothing', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'vp-process-recover-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  t.same(await new ProcessRuntime({ workRoot: root }).recover(), []);
});
