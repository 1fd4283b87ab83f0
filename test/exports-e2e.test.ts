// Model exports end to end: a model trained here by the real trainer is exported by a real worker agent (process
// runtime, the trainer venv) running the real `yolo export`, through the API and the scheduler. Each artifact is
// downloaded through its signed URL and loaded by ultralytics, and its predictions on a test image are compared with
// the PyTorch weights' (test/exports/compare_predictions.py). Also: uploaded weights, reuse of a finished artifact,
// a format no host can export (503 naming its toolchain), cancel while running, a host lost mid-export, and
// `ul cloud export` from the ultralytics-platform CLI.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { enrollAgent, runAgent, type Spawned } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset, shapesFiles } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VENV = join(ROOT, '.venv-trainer');
if (!existsSync(join(VENV, 'bin/yolo')))
  throw new Error(`no trainer environment at ${VENV}: run installer/trainer/build-trainer-env.sh (.ci/run does)`);

const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  HOST_LOST_GRACE_SECONDS: '4',
  RATE_LIMIT_TRAINING: '1000',
  RATE_LIMIT_EXPORT: '1000',
});
const { server, alice } = world;
await server.services().billing.grant('alice', 100_000, 'CI credit');
await createShapesDataset(t, world, alice, 'alice', 'shapes');
if (
  (await call(server, 'POST', '/api/projects', { key: alice, body: { project: 'detector', name: 'Detector' } }))
    .status !== 201
)
  throw new Error('project not created');

const dir = mkdtempSync(join(tmpdir(), 'vp-export-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A worker host of its own (config, work dir), running the process runtime on the trainer venv. */
async function startHost(name: string): Promise<Spawned> {
  const config = join(dir, `${name}.json`);
  const { enrollmentToken } = await server.services().hosts.connect(name);
  await enrollAgent(t, server.url, enrollmentToken, config);
  return runAgent(t, config, {
    VP_WORKER_RUNTIME: 'process',
    VP_WORKER_WORK_DIR: join(dir, `${name}-work`),
    VP_WORKER_PROCESS_VENV: VENV,
  });
}
const hostExporters = async (name: string) =>
  (
    await server
      .services()
      .em.getConnection()
      .execute(`select exporters from hosts where name = ? and state = 'connected'`, [name])
  )[0]?.exporters as string[] | undefined;
let agent = await startHost('export-host');
await eventually(
  async () => (await hostExporters('export-host'))?.includes('onnx'),
  `the host to connect and report its exporters:\n${agent.output().slice(-3000)}`,
  120_000,
);

function run(
  command: string,
  args: string[],
  cwd = dir,
  env: Record<string, string | undefined> = process.env,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.on('close', (code) => resolve({ code, out }));
  });
}
const python = (args: string[]) => run(join(VENV, 'bin/python'), args);

interface ExportView {
  id: string;
  format: string;
  status: string;
  args?: Record<string, unknown>;
  file?: { size: number; downloadUrl: string; downloadFilename: string };
  error?: { message: string };
}
const exportsPath = (model: string) => `/api/models/alice/detector/${model}/exports`;
const readExport = async (model: string, id: string) =>
  (await call<{ export: ExportView }>(server, 'GET', `${exportsPath(model)}/${id}`, { key: alice })).body.export;
const jobLog = async (model: string, id: string) => {
  const [row] = await server
    .services()
    .em.getConnection()
    .execute(`select job_id from model_exports where id = ?`, [id]);
  const logs = await call<{ lines: Array<{ line: string }> }>(
    server,
    'GET',
    `/api/jobs/${row?.job_id}/logs?limit=5000`,
    { key: alice },
  );
  return `${model} export ${id}:\n${(logs.body.lines ?? [])
    .map((line) => line.line)
    .slice(-40)
    .join('\n')}\nagent:\n${agent.output().slice(-3000)}`;
};
async function startExport(model: string, body: Record<string, unknown>): Promise<string> {
  const created = await call<{ id: string; status: string }>(server, 'POST', exportsPath(model), { key: alice, body });
  if (created.status !== 201)
    throw new Error(`export ${JSON.stringify(body)}: ${created.status} ${JSON.stringify(created.body)}`);
  return created.body.id;
}
const ENDED = ['completed', 'failed', 'cancelled'];
async function finished(model: string, id: string, timeoutMs = 300_000): Promise<ExportView> {
  return eventually(
    async () => {
      const view = await readExport(model, id);
      return ENDED.includes(view.status) && view;
    },
    `export ${id} to end`,
    timeoutMs,
  );
}

/** Downloads a finished export; a directory format comes as a ZIP of that directory, unpacked here as a user would. Returns the path YOLO loads. */
async function download(view: ExportView, into: string): Promise<string> {
  mkdirSync(into, { recursive: true });
  const response = await fetch(view.file!.downloadUrl);
  if (!response.ok) throw new Error(`download ${view.file!.downloadFilename}: HTTP ${response.status}`);
  const path = join(into, view.file!.downloadFilename);
  writeFileSync(path, Buffer.from(await response.arrayBuffer()));
  if (!path.endsWith('.zip')) return path;
  const unzip = await python(['-m', 'zipfile', '-e', path, into]);
  if (unzip.code !== 0) throw new Error(unzip.out);
  // Straight after unzip, no renaming: the archive holds the folder under the name ultralytics wrote it with.
  return path.slice(0, -'.zip'.length);
}

// The model every export here starts from: trained by the platform on the shapes dataset.
const { id: modelId } = await createModel(world, alice, { project: 'detector', model: 'shapes' });
const trained = await call<{ jobId: string }>(server, 'POST', '/api/training/start', {
  key: alice,
  // Enough steps (20 epochs of 8 batches, no warm-up) for boxes of real confidence to compare.
  body: {
    modelId,
    trainArgs: {
      model: 'yolo11n.yaml',
      data: 'ul://alice/datasets/shapes',
      epochs: 20,
      imgsz: 128,
      batch: 8,
      warmup_epochs: 0,
      workers: 0,
      plots: false,
    },
    gpuType: 'cpu',
  },
});
if (trained.status !== 200) throw new Error(`training: ${trained.status} ${JSON.stringify(trained.body)}`);
await eventually(
  async () =>
    (await call<{ model: { status: string } }>(server, 'GET', '/api/models/alice/detector/shapes', { key: alice })).body
      .model.status === 'completed',
  `the training to complete:\n${agent.output().slice(-3000)}`,
  300_000,
);
const files = await call<{ files: Array<{ downloadUrl: string }> }>(
  server,
  'GET',
  '/api/models/alice/detector/shapes/files',
  { key: alice },
);
const weights = Buffer.from(await (await fetch(files.body.files[0].downloadUrl)).arrayBuffer());
const weightsPath = join(dir, 'shapes.pt');
writeFileSync(weightsPath, weights);
// A validation image the model has seen the like of, to predict on.
const image = join(dir, 'test.jpg');
const sample = Object.entries(await shapesFiles(0, 1, 99)).find(([path]) => path.startsWith('images/val/'))!;
writeFileSync(image, sample[1]);

/** Predictions of the artifact against the .pt's on the same image (classes, IoU > 0.9 of matched boxes, confidences ±0.02). */
async function compare(t: Test, artifact: string, imgsz: number): Promise<void> {
  const compared = await python([
    join(ROOT, 'test/exports/compare_predictions.py'),
    weightsPath,
    artifact,
    image,
    '--imgsz',
    String(imgsz),
    '--conf',
    '0.05',
  ]);
  const report = JSON.parse(compared.out.trim().split('\n').pop() ?? '{}') as {
    ok?: boolean;
    details?: { matched?: number };
  };
  t.equal(compared.code, 0, compared.out.slice(-3000));
  t.ok(report.ok, `predictions match: ${JSON.stringify(report)}`);
  t.ok((report.details?.matched ?? 0) > 0, 'there were boxes to compare');
}

for (const format of ['torchscript', 'onnx', 'openvino', 'ncnn', 'mnn']) {
  t.test(`${format}: exported by the worker host, downloadable, and predicts as the PyTorch weights do`, async (t) => {
    const id = await startExport('shapes', { format, args: { imgsz: 128 } });
    const view = await finished('shapes', id);
    t.equal(view.status, 'completed', view.error?.message ?? (await jobLog('shapes', id)));
    t.match(view, {
      format,
      args: { imgsz: 128 },
      file: { size: Number, downloadUrl: /^http/, downloadFilename: String },
    });
    const artifact = await download(view, join(dir, format));
    await compare(t, artifact, 128);
  });
}

t.test('the same weights and arguments again reuse the finished artifact', async (t) => {
  const list = await call<{ exports: ExportView[] }>(server, 'GET', `${exportsPath('shapes')}?status=completed`, {
    key: alice,
  });
  // Not the automatic (dynamic) ONNX export the platform queued when training gave the model weights.
  const first = list.body.exports.find((view) => view.format === 'onnx' && !view.args?.dynamic)!;
  const created = await call<{ id: string; status: string }>(server, 'POST', exportsPath('shapes'), {
    key: alice,
    body: { format: 'onnx', args: { imgsz: 128 } },
  });
  t.equal(created.status, 201);
  const again = await readExport('shapes', created.body.id);
  t.not(again.id, first.id);
  t.match(again, { status: 'completed', file: { size: first.file!.size } }, 'completed at once, with the same file');
});

t.test('uploaded weights export too, recording the source weights hash', async (t) => {
  const { id } = await createModel(world, alice, { project: 'detector', model: 'uploaded' });
  await uploadWeights(world, alice, id, weights, 'uploaded.pt');
  const exportId = await startExport('uploaded', { format: 'onnx', args: { imgsz: 160 } });
  const view = await finished('uploaded', exportId);
  t.equal(view.status, 'completed', view.error?.message ?? (await jobLog('uploaded', exportId)));
  const artifact = await download(view, join(dir, 'uploaded'));
  await compare(t, artifact, 160);
  const [hashes] = await server
    .services()
    .em.getConnection()
    .execute(`select weights_sha256 as exported from model_exports where id = ?`, [exportId]);
  t.equal(
    hashes.exported,
    createHash('sha256').update(weights).digest('hex'),
    'the export records the SHA-256 of the weights it came from',
  );
});

t.test('a CoreML export gets a mobile import link that anyone holding it resolves to the model', async (t) => {
  const id = await startExport('shapes', { format: 'coreml', args: { imgsz: 128 } });
  const view = await finished('shapes', id);
  t.equal(view.status, 'completed', view.error?.message ?? (await jobLog('shapes', id)));
  t.match(view.file, { downloadFilename: 'shapes.mlpackage.zip' });
  const link = await call<{ importUrl: string; expiresAt: string }>(
    server,
    'POST',
    `${exportsPath('shapes')}/${id}/mobile`,
    { key: alice },
  );
  t.equal(link.status, 200, JSON.stringify(link.body));
  const fragment = new URLSearchParams(new URL(link.body.importUrl).hash.slice(1));
  const resolved = await call<{ format: string; task: string; size: number; downloadUrl: string }>(
    server,
    'POST',
    `/api/mobile/models/${id}`,
    {
      body: { expires: Number(fragment.get('expires')), signature: fragment.get('signature') },
    },
  );
  t.equal(resolved.status, 200, JSON.stringify(resolved.body));
  t.match(resolved.body, { format: 'coreml', task: 'detect', size: view.file!.size });
  const bytes = Buffer.from(await (await fetch(resolved.body.downloadUrl)).arrayBuffer());
  t.equal(bytes.length, view.file!.size, 'the link downloads the export without a key');
  t.equal(bytes.subarray(0, 2).toString('latin1'), 'PK', 'a ZIP of the .mlpackage');
});

t.test('a format no connected host can export answers 503 naming its toolchain', async (t) => {
  const exporters = (await hostExporters('export-host')) ?? [];
  t.notOk(exporters.includes('saved_model'), 'this trainer environment has no TensorFlow');
  const refused = await call<{ error: string }>(server, 'POST', exportsPath('shapes'), {
    key: alice,
    body: { format: 'saved_model' },
  });
  t.equal(refused.status, 503);
  t.match(refused.body.error, /saved_model/, `the message names the format: ${refused.body.error}`);
  t.match(refused.body.error, /tensorflow/, 'and the toolchain its hosts lack');
});

t.test('cancel while running: the export ends cancelled, with no file', async (t) => {
  const id = await startExport('shapes', { format: 'ncnn', args: { imgsz: 320 } });
  await eventually(async () => (await readExport('shapes', id)).status === 'running', 'the export to run', 120_000);
  const cancelled = await call<{ success: boolean; action: string }>(
    server,
    'DELETE',
    `${exportsPath('shapes')}/${id}`,
    { key: alice },
  );
  t.same(cancelled.body, { success: true, action: 'cancelled' });
  const view = await finished('shapes', id, 60_000);
  t.equal(view.status, 'cancelled');
  t.notOk(view.file?.downloadUrl, 'no file');
});

t.test('an export whose host disappears is requeued and completes on another host', async (t) => {
  const id = await startExport('shapes', { format: 'torchscript', args: { imgsz: 192 } });
  await eventually(async () => (await readExport('shapes', id)).status === 'running', 'the export to run', 120_000);
  // The machine dies: its agent and the exporter it started go at once, without a word to the control plane.
  const [{ job_id: jobId }] = (await server
    .services()
    .em.getConnection()
    .execute(`select job_id from model_exports where id = ?`, [id])) as Array<{ job_id: string }>;
  const record = JSON.parse(
    readFileSync(join(dir, 'export-host-work', '.vp-jobs', 'process', jobId, 'job.json'), 'utf8'),
  ) as { pid: number };
  agent.child.kill('SIGKILL');
  process.kill(-record.pid, 'SIGKILL');
  await agent.exited;
  agent = await startHost('second-host');
  const view = await finished('shapes', id);
  t.equal(view.status, 'completed', view.error?.message ?? (await jobLog('shapes', id)));
  const [job] = await server
    .services()
    .em.getConnection()
    .execute(
      `select j.attempts, h.name as host from model_exports e join jobs j on j.id = e.job_id left join hosts h on h.id = j.host_id where e.id = ?`,
      [id],
    );
  t.ok(job.attempts >= 2, `ran again (${job.attempts} attempts)`);
  await compare(t, await download(view, join(dir, 'requeued')), 192);
});

t.test('ul cloud export model=ul://… format=onnx waits for the export and downloads it', async (t) => {
  const work = join(dir, 'user');
  mkdirSync(work, { recursive: true });
  const env = {
    ...process.env,
    ULTRALYTICS_PLATFORM_URL: server.url,
    ULTRALYTICS_API_KEY: alice,
    YOLO_CONFIG_DIR: join(work, 'config'),
    YOLO_OFFLINE: '1',
  };
  const exported = await run(
    join(VENV, 'bin/ul'),
    ['cloud', 'export', 'model=ul://alice/detector/shapes', 'format=onnx', 'imgsz=128', 'simplify=False'],
    work,
    env,
  );
  t.equal(exported.code, 0, exported.out.slice(-3000));
  t.match(exported.out, /Export: [0-9a-f]{24} \(queued/);
  const onnx = join(work, 'shapes.onnx');
  t.ok(existsSync(onnx), `downloaded to the working directory: ${exported.out.slice(-1000)}`);
  t.ok(readFileSync(onnx).length > 1000);
  await compare(t, onnx, 128);
});
