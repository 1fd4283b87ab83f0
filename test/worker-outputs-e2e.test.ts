// Exports on worker hosts, end to end with real vp-worker agents (process runtime) and a real control plane: agents
// probe their trainer environment's exporters and report them; a job that needs an export toolchain goes only to a
// host that reports it; a job's outputs (a file, a directory zipped) are uploaded after it exited 0 and before it
// is completed, also by an agent restarted meanwhile; a missing output fails the job; uploads by another host or
// for another attempt are refused.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import t from 'tap';
import yauzl from 'yauzl';
import { AGENT_ROUTES, routePath } from '@vp/protocol';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { jobOutputs } from '../control-plane/src/jobs/job-output.store.ts';
import { enrollAgent, runAgent, type Spawned } from './helpers/agent.ts';
import { eventually, queueCommand, readJob } from './helpers/host-jobs.ts';
import { call, startTestServer } from './helpers/server.ts';

const env = {
  RATE_LIMIT_DEFAULT: '100000',
  RATE_LIMIT_MUTATION: '100000',
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '30',
  JOB_OUTPUT_MAX_BYTES: '1000000',
};
const server = await startTestServer(t, { env });
await server.services().account.createUser('petra');
await server.services().account.createTeam('exporters', 'petra');
const apiKey = (await server.services().apiKeys.create('exporters', 'ci')).key;

const PROBE = { exporters: ['onnx', 'openvino'], missing: { engine: 'TensorRT needs an NVIDIA GPU' } };

/** A host of the team with its agent's config and work dir in a temp dir; `exports`: a stand-in trainer venv whose probe reports PROBE. */
async function enrolledHost(name: string, options: { exports: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), 'vp-agent-outputs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { enrollmentToken } = await server.services().hosts.connect(name, 'exporters');
  const config = join(dir, 'config.json');
  await enrollAgent(t, server.url, enrollmentToken, config);
  const workRoot = join(dir, 'work');
  const agentEnv: Record<string, string> = { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: workRoot };
  if (options.exports) {
    const venv = join(dir, 'venv');
    mkdirSync(join(venv, 'bin'), { recursive: true });
    writeFileSync(join(venv, 'bin', 'vp-probe-exporters'), `#!/bin/sh\necho '${JSON.stringify(PROBE)}'\n`);
    chmodSync(join(venv, 'bin', 'vp-probe-exporters'), 0o755);
    agentEnv.VP_WORKER_PROCESS_VENV = venv;
  }
  const workerKey = (JSON.parse(readFileSync(config, 'utf8')) as { workerKey: string }).workerKey;
  return { name, workRoot, workerKey, start: () => runAgent(t, config, agentEnv) };
}

const hostRow = (name: string) => (server.orm.em.fork() as EntityManager).findOneOrFail(Host, { name });
const script = (workDir: string, code: string) => ({
  command: [process.execPath, '-e', `const fs = require('fs'); ${code}`],
  workDir,
});
const logLines = async (jobId: string) =>
  (
    await call<{ lines: Array<{ line: string }> }>(server, 'GET', `/api/jobs/${jobId}/logs`, { key: apiKey })
  ).body.lines.map((line) => line.line);
const outputsOf = (jobId: string) => jobOutputs(server.orm.em.fork() as EntityManager, jobId);

async function stored(key: string): Promise<Buffer> {
  const read = await server.storage.store.get(key);
  if (!read) throw new Error(`nothing stored at ${key}`);
  const chunks: Buffer[] = [];
  for await (const chunk of read.stream as Readable) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A zip's files by name (directories end with /). */
async function unzip(bytes: Buffer): Promise<Record<string, string>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(bytes, { lazyEntries: true }, (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  const files: Record<string, string> = {};
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName.endsWith('/')) {
        files[entry.fileName] = '';
        return zip.readEntry();
      }
      zip.openReadStream(entry, (error, stream) => {
        if (error) return reject(error);
        if (!stream) return reject(new Error(`no stream for ${entry.fileName}`));
        const chunks: Buffer[] = [];
        stream
          .on('data', (chunk: Buffer) => chunks.push(chunk))
          .on('end', () => {
            files[entry.fileName] = Buffer.concat(chunks).toString('utf8');
            zip.readEntry();
          });
      });
    });
    zip.on('end', resolve).on('error', reject);
    zip.readEntry();
  });
  return files;
}

const exporting = await enrolledHost('exporting', { exports: true });
/** Started by the first test, running for the others. */
let exportingAgent: Spawned;
let plainAgent: Spawned;

/** eventually(), failing with both agents' logs. */
const until = <T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs?: number) =>
  eventually(check, what, timeoutMs).catch((error: Error) => {
    throw new Error(
      `${error.message}\nexporting agent:\n${exportingAgent?.output()}\nplain agent:\n${plainAgent?.output()}`,
    );
  });
const plain = await enrolledHost('plain', { exports: false });

t.test('capabilities reach the host row; a toolchain job goes only to a host that exports it', async (t) => {
  plainAgent = plain.start();
  await until(async () => plainAgent.output().includes('no exporters'), 'the plain agent to probe');
  await until(async () => (await hostRow('plain')).state === 'connected', 'the plain host to connect');
  const jobId = await queueCommand(server, 'exporters', script('jobs/needs-openvino', `console.log('exporting')`), {
    toolchain: 'openvino',
  });
  await new Promise((resolve) => setTimeout(resolve, 2000));
  t.match(await readJob(server, jobId), { status: 'queued' }, 'the connected host without the toolchain leaves it');

  exportingAgent = exporting.start();
  await until(async () => (await hostRow('exporting')).exporters.length > 0, 'the exporters to be stored');
  t.match(await hostRow('exporting'), { exporters: PROBE.exporters, missingExporters: PROBE.missing });
  t.match(await hostRow('plain'), { exporters: [] });
  await until(async () => (await readJob(server, jobId)).status === 'completed', 'the job to complete');
  t.equal((await readJob(server, jobId)).host?.name, 'exporting');

  const listed = await call<{
    hosts: Array<{ name: string; exporters: string[]; missingExporters: Record<string, string> }>;
  }>(server, 'GET', '/api/hosts', { key: apiKey });
  t.match(
    listed.body.hosts.find((host) => host.name === 'exporting'),
    { exporters: PROBE.exporters, missingExporters: PROBE.missing },
    'GET /api/hosts shows them',
  );
});

t.test(
  'outputs: a file as it is, a directory as a zip of its files; uploaded before the job is completed',
  async (t) => {
    const onnx = 'ONNX'.repeat(100_000);
    const jobId = await queueCommand(server, 'exporters', {
      ...script(
        'jobs/export',
        `fs.writeFileSync('best.onnx', 'ONNX'.repeat(100000));
       fs.mkdirSync('best_openvino_model/sub', { recursive: true });
       fs.writeFileSync('best_openvino_model/best.xml', '<net/>');
       fs.writeFileSync('best_openvino_model/sub/best.bin', 'weights');
       fs.symlinkSync('/etc/passwd', 'best_openvino_model/leak');
       console.log('exported')`,
      ),
      outputs: [
        { path: 'best.onnx', name: 'best.onnx' },
        { path: 'best_openvino_model', name: 'best_openvino_model.zip' },
      ],
    });
    await until(
      async () => ['completed', 'failed'].includes((await readJob(server, jobId)).status),
      'the job to end',
      30_000,
    );
    t.match(await readJob(server, jobId), { status: 'completed', error: null });
    const outputs = await outputsOf(jobId);
    t.same(
      outputs.map((output) => [output.name, output.attempt]),
      [
        ['best.onnx', 1],
        ['best_openvino_model.zip', 1],
      ],
    );
    const file = await stored(outputs[0].storageKey);
    t.equal(file.toString('utf8'), onnx, 'the file, byte for byte');
    t.match(outputs[0], { size: file.length, sha256: createHash('sha256').update(file).digest('hex') });
    const zip = await stored(outputs[1].storageKey);
    t.match(outputs[1], { size: zip.length, sha256: createHash('sha256').update(zip).digest('hex') });
    t.same(
      await unzip(zip),
      {
        'best_openvino_model/': '',
        'best_openvino_model/best.xml': '<net/>',
        'best_openvino_model/sub/': '',
        'best_openvino_model/sub/best.bin': 'weights',
      },
      "the directory's files under its own name (unzipped, the folder YOLO() loads), the symlink left out",
    );
    const lines = await logLines(jobId);
    t.match(lines, [
      'exported',
      /^uploading best\.onnx \(400\.0 kB\)$/,
      'uploaded best.onnx',
      /^uploading best_openvino_model\.zip \(\d+ B\)$/,
      'uploaded best_openvino_model.zip',
    ]);
  },
);

t.test('a missing output fails the job with its path; one over JOB_OUTPUT_MAX_BYTES with the reason', async (t) => {
  const jobId = await queueCommand(server, 'exporters', {
    ...script('jobs/no-output', `console.log('forgot to export')`),
    outputs: [{ path: 'best.onnx', name: 'best.onnx' }],
  });
  await until(async () => (await readJob(server, jobId)).status === 'failed', 'the job to fail');
  t.match(await readJob(server, jobId), { error: 'the job produced no best.onnx' });
  t.same(await outputsOf(jobId), []);

  const huge = await queueCommand(server, 'exporters', {
    ...script('jobs/huge', `fs.writeFileSync('huge.bin', Buffer.alloc(1000001))`),
    outputs: [{ path: 'huge.bin', name: 'huge.bin' }],
  });
  await until(async () => (await readJob(server, huge)).status === 'failed', 'the job to fail');
  t.match(await readJob(server, huge), {
    error: 'uploading huge.bin failed: HTTP 413: A job output may have at most 1000000 bytes',
  });
  t.match(
    await logLines(huge),
    ['uploading huge.bin (1.0 MB)', 'uploading huge.bin failed: HTTP 413: A job output may have at most 1000000 bytes'],
    'said in the job log too',
  );
});

t.test('an output PUT by another host, for another attempt, or under a bad name is refused', async (t) => {
  const jobId = await queueCommand(
    server,
    'exporters',
    script('jobs/gated', `const wait = setInterval(() => { if (fs.existsSync('go')) clearInterval(wait); }, 50)`),
    { toolchain: 'onnx' },
  );
  await until(async () => (await readJob(server, jobId)).acceptedAt, 'the job to run');
  const put = (key: string, attempt: number, name = 'best.onnx') =>
    fetch(`${server.url}${routePath(AGENT_ROUTES.output, { jobId, name })}?attempt=${attempt}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
      body: 'bytes',
    });
  const refused = async (response: Promise<Response>, status: number, error: RegExp) => {
    const answer = await response;
    t.equal(answer.status, status);
    t.match(await answer.json(), { error });
  };
  await refused(put(plain.workerKey, 1), 404, /No running job/);
  await refused(put(exporting.workerKey, 2), 409, /Attempt 2 is no longer/);
  await refused(put(exporting.workerKey, 1, 'bad name'), 400, /name/);
  await refused(put('vpw_not_a_key', 1), 401, /worker key/);
  const accepted = await put(exporting.workerKey, 1);
  t.match(
    await accepted.json(),
    { success: true, size: 5, sha256: createHash('sha256').update('bytes').digest('hex') },
    'its own host, its attempt',
  );
  t.same(
    (await outputsOf(jobId)).map((output) => output.name),
    ['best.onnx'],
  );
  writeFileSync(join(exporting.workRoot, 'jobs/gated/go'), '');
  await until(async () => (await readJob(server, jobId)).status === 'completed', 'the job to complete');
});

t.test(
  'the agent stopped mid-job: the restarted agent uploads the outputs of the job that ended meanwhile, then completes it',
  async (t) => {
    const jobId = await queueCommand(
      server,
      'exporters',
      {
        ...script(
          'jobs/outlives',
          `console.log('before'); const wait = setInterval(() => { if (!fs.existsSync('go')) return; clearInterval(wait); fs.writeFileSync('model.onnx', 'late model'); }, 50)`,
        ),
        outputs: [{ path: 'model.onnx', name: 'model.onnx' }],
      },
      { toolchain: 'onnx' },
    );
    await until(async () => (await logLines(jobId)).includes('before'), 'the job to start');
    t.equal((await readJob(server, jobId)).host?.name, 'exporting');
    exportingAgent.child.kill('SIGTERM');
    t.equal(await exportingAgent.exited, 0, 'the agent stops cleanly');
    writeFileSync(join(exporting.workRoot, 'jobs/outlives/go'), '');
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.match(await readJob(server, jobId), { status: 'running' });
    exportingAgent = exporting.start();
    await until(async () => (await readJob(server, jobId)).status === 'completed', 'the job to complete');
    const [output] = await outputsOf(jobId);
    t.equal((await stored(output.storageKey)).toString('utf8'), 'late model');
  },
);
