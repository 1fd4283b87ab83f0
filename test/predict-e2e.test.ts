// Model predict end to end: a model trained by the platform on a real worker agent (process runtime, the trainer venv)
// gets its ONNX export automatically when the training job ends (real `yolo export` on the same host); then the
// ultralytics-platform SDK's models.predict answers what ultralytics' own predict gives on that same ONNX artifact
// (boxes IoU > 0.99, confidences within 1e-3), normalize/decimals/conf shape the rows, the same weights uploaded to
// another model reuse the artifact, and `ul cloud predict` saves an annotated image from the answer.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { createShapesDataset, shapesFiles } from './helpers/training-data.ts';
import { startWorld } from './helpers/world.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TRAINER = join(ROOT, '.venv-trainer');
const SDK_PYTHON = join(ROOT, '.venv-sdk/bin/python');
if (!existsSync(join(TRAINER, 'bin/yolo')) || !existsSync(SDK_PYTHON))
  throw new Error('no trainer or SDK environment (.venv-trainer, .venv-sdk): run .ci/run');

const IMGSZ = 128;
const NAMES = ['square', 'disc'];
const world = await startWorld(t, {
  WORKER_HEARTBEAT_SECONDS: '1',
  RATE_LIMIT_PREDICT: '1000',
  RATE_LIMIT_TRAINING: '1000',
});
const { server, alice } = world;
const dir = mkdtempSync(join(tmpdir(), 'vp-predict-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? dir,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

// A worker host of this test's own, running `yolo export` with the process runtime on the trainer venv.
const config = join(dir, 'host.json');
const { enrollmentToken } = await server.services().hosts.connect('predict-host');
await enrollAgent(t, server.url, enrollmentToken, config);
const agent = runAgent(t, config, {
  VP_WORKER_RUNTIME: 'process',
  VP_WORKER_WORK_DIR: join(dir, 'work'),
  VP_WORKER_PROCESS_VENV: TRAINER,
});
const exporters = async () =>
  (
    await server
      .services()
      .em.getConnection()
      .execute(`select exporters from hosts where name = 'predict-host' and state = 'connected'`)
  )[0]?.exporters as string[] | undefined;
await eventually(
  async () => (await exporters())?.includes('onnx'),
  `the host to report its exporters:\n${agent.output().slice(-3000)}`,
  120_000,
);

// Trained by the platform (as exports-e2e does): enough steps for boxes of real confidence. The training job's end
// alone queues the ONNX export.
await server.services().billing.grant('alice', 100_000, 'CI credit');
await createShapesDataset(t, world, alice, 'alice', 'shapes');
await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, { project: 'vision', model: 'shapes', task: 'detect' });
const trained = await call(server, 'POST', '/api/training/start', {
  key: alice,
  body: {
    modelId: model.id,
    trainArgs: {
      model: 'yolo11n.yaml',
      data: 'ul://alice/datasets/shapes',
      epochs: 20,
      imgsz: IMGSZ,
      batch: 8,
      warmup_epochs: 0,
      workers: 0,
      plots: false,
    },
    gpuType: 'cpu',
  },
});
if (trained.status !== 200) throw new Error(`training: ${trained.status} ${JSON.stringify(trained.body)}`);
interface ExportView {
  id: string;
  format: string;
  status: string;
  args: Record<string, unknown>;
  file?: { downloadUrl: string; size: number };
  error?: { message: string };
}
const exportsOf = async (slug: string) =>
  (await call<{ exports: ExportView[] }>(server, 'GET', `/api/models/alice/vision/${slug}/exports`, { key: alice }))
    .body.exports;
const onnxExport = await eventually(
  async () => {
    const view = (await exportsOf('shapes')).find((candidate) => candidate.format === 'onnx');
    return view && ['completed', 'failed', 'cancelled'].includes(view.status) && view;
  },
  `the training and then the automatic ONNX export to end:\n${agent.output().slice(-3000)}`,
  600_000,
);
const artifact = join(dir, 'shapes.onnx');
if (onnxExport.file)
  writeFileSync(artifact, Buffer.from(await (await fetch(onnxExport.file.downloadUrl)).arrayBuffer()));
// Validation pictures of the kind it trained on, as JPEG and PNG, in several sizes.
const pictures: Array<{ file: string; label: string }> = [];
for (const [index, [name, bytes]] of Object.entries(await shapesFiles(0, 6, 99))
  .filter(([path]) => path.startsWith('images/val/'))
  .entries()) {
  const file = join(dir, `picture-${index}${index % 2 ? '.png' : '.jpg'}`);
  const resized = sharp(bytes as Buffer).resize({ width: 200 + 60 * index, height: 160 + 25 * index, fit: 'fill' });
  writeFileSync(file, await (index % 2 ? resized.png() : resized.jpeg({ quality: 90 })).toBuffer());
  pictures.push({ file, label: `${basename(name)} at ${200 + 60 * index} × ${160 + 25 * index}` });
}

t.test(
  "the training job's end queued an ONNX export (dynamic, at the training size) that the host completed",
  async (t) => {
    t.equal(onnxExport.status, 'completed', onnxExport.error?.message ?? agent.output().slice(-3000));
    // Queued once the trainer had left the host, never beside it (both would share the host's cores).
    const [order] = await server
      .services()
      .em.getConnection()
      .execute(
        `select t.finished_at::text as trained, e.created_at::text as queued, e.created_at >= t.finished_at as after
       from jobs t, jobs e where t.kind = 'training' and t.subject_id = ? and e.kind = 'export' and e.subject_id = ?`,
        [model.id, onnxExport.id],
      );
    t.equal(order?.after, true, `export queued at ${order?.queued}, training ended at ${order?.trained}`);
    t.match(onnxExport.args, { dynamic: true, imgsz: IMGSZ });
    t.ok(existsSync(artifact) && readFileSync(artifact).length > 1000, 'the artifact downloads');
  },
);

interface Row {
  name: string;
  class: number;
  confidence: number;
  box: { x1: number; y1: number; x2: number; y2: number };
}
interface Reference {
  shape: number[];
  boxes: number[][];
  conf: number[];
  cls: number[];
}

const iou = (a: number[], b: number[]) => {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = w * h;
  const union = (a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter;
  return union > 0 ? inter / union : a.every((v, i) => v === b[i]) ? 1 : 0;
};

t.test("the SDK's models.predict answers what ultralytics predicts on the same ONNX", async (t) => {
  // The training size (the default) and a larger one with a lower IoU threshold; conf at the API's minimum.
  const runs = [
    { conf: 0.01, iou: 0.7, imgsz: IMGSZ },
    { conf: 0.05, iou: 0.5, imgsz: 2 * IMGSZ },
  ];
  const reference = await run(join(TRAINER, 'bin/python'), [
    join(ROOT, 'test/inference/ultralytics_reference.py'),
    'predict',
    artifact,
    'detect',
    '--runs',
    JSON.stringify(runs),
    ...pictures.map((p) => p.file),
  ]);
  t.equal(reference.code, 0, reference.err.slice(-2000));
  const expected = (JSON.parse(reference.out) as Reference[][]).flat();
  const script = [
    'import json, os, sys',
    'from ultralytics_platform import Platform',
    "client = Platform(api_key=os.environ['KEY'], base_url=os.environ['URL'])",
    'answers = []',
    'for options in json.loads(sys.argv[1]):',
    '    for path in sys.argv[2:]:',
    "        with open(path, 'rb') as f:",
    "            answers.append(client.models.predict('alice', 'vision', 'shapes', body={'file': f, **options}))",
    'print(json.dumps(answers))',
  ].join('\n');
  const sdk = await run(SDK_PYTHON, ['-c', script, JSON.stringify(runs), ...pictures.map((p) => p.file)], {
    env: { ...process.env, KEY: alice, URL: server.url },
  });
  t.equal(sdk.code, 0, sdk.err.slice(-2000));
  const answers = JSON.parse(sdk.out) as Array<{
    images: Array<{ shape: number[]; results: Row[] }>;
    metadata: { task: string; classNames: string[] };
  }>;
  let compared = 0;
  runs
    .flatMap((options) => pictures.map((picture) => `${picture.label} at ${options.imgsz}`))
    .forEach((label, index) => {
      const picture = { label };
      const answer = answers[index]!;
      const want = expected[index]!;
      t.strictSame(answer.images[0]!.shape, want.shape, `${picture.label}: shape`);
      t.equal(answer.metadata.task, 'detect');
      t.strictSame(answer.metadata.classNames, NAMES);
      const rows = answer.images[0]!.results;
      t.equal(rows.length, want.boxes.length, `${picture.label}: as many boxes as ultralytics (${want.boxes.length})`);
      rows.forEach((row, k) => {
        const box = [row.box.x1, row.box.y1, row.box.x2, row.box.y2];
        t.equal(row.class, want.cls[k], `${picture.label} #${k}: class`);
        t.equal(row.name, NAMES[want.cls[k]!]);
        t.ok(
          iou(box, want.boxes[k]!) > 0.99,
          `${picture.label} #${k}: IoU ${iou(box, want.boxes[k]!).toFixed(4)} > 0.99`,
        );
        t.ok(
          Math.abs(row.confidence - want.conf[k]!) < 1e-3,
          `${picture.label} #${k}: confidence ${row.confidence} vs ${want.conf[k]}`,
        );
        compared += 1;
      });
    });
  t.ok(compared > 0, `there were boxes to compare (${compared})`);
});

const predictForm = async (slug: string, fields: Record<string, string>, file: string) => {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([readFileSync(file)]), basename(file));
  const response = await fetch(`${server.url}/api/models/alice/vision/${slug}/predict`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}` },
    body: form,
  });
  return {
    status: response.status,
    body: (await response.json()) as { error?: string; images: Array<{ shape: number[]; results: Row[] }> },
  };
};

t.test(
  'conf filters, normalize gives 0-1 fractions, decimals rounds; the default size is the training size',
  async (t) => {
    const file = pictures[0]!.file;
    const plain = await predictForm('shapes', { conf: '0.01' }, file);
    t.equal(plain.status, 200, JSON.stringify(plain.body));
    const rows = plain.body.images[0]!.results;
    t.ok(rows.length > 0, 'there are rows');
    const sized = await predictForm('shapes', { conf: '0.01', imgsz: String(IMGSZ) }, file);
    t.strictSame(sized.body.images[0]!.results, rows, 'imgsz defaults to the training size');
    const [height, width] = plain.body.images[0]!.shape as [number, number];
    const confident = await predictForm('shapes', { conf: '0.5' }, file);
    t.strictSame(
      confident.body.images[0]!.results,
      rows.filter((row) => row.confidence >= 0.5),
      'conf keeps the rows at or above it',
    );
    const normalized = await predictForm('shapes', { conf: '0.01', normalize: 'true', decimals: '3' }, file);
    normalized.body.images[0]!.results.forEach((row, k) => {
      const box = rows[k]!.box;
      t.ok(
        Math.abs(row.box.x1 - box.x1 / width) < 1e-3 && Math.abs(row.box.y2 - box.y2 / height) < 1e-3,
        `row ${k}: fractions of the width and height`,
      );
      t.ok(
        [row.confidence, ...Object.values(row.box)].every((value) => Number(value.toFixed(3)) === value),
        `row ${k}: 3 decimals`,
      );
    });
  },
);

t.test('the same weights uploaded to another model reuse the artifact and predict alike', async (t) => {
  const files = await call<{ files: Array<{ downloadUrl: string }> }>(
    server,
    'GET',
    '/api/models/alice/vision/shapes/files',
    { key: alice },
  );
  const weights = Buffer.from(await (await fetch(files.body.files[0]!.downloadUrl)).arrayBuffer());
  const copy = await createModel(world, alice, {
    project: 'vision',
    model: 'uploaded',
    task: 'detect',
    trainArgs: { imgsz: IMGSZ },
  });
  await uploadWeights(world, alice, copy.id, weights, 'best.pt');
  const [reused] = await exportsOf('uploaded');
  t.match(
    reused,
    {
      format: 'onnx',
      status: 'completed',
      args: { dynamic: true, imgsz: IMGSZ },
      file: { size: onnxExport.file!.size },
    },
    'completed at once',
  );
  const a = await predictForm('shapes', { conf: '0.01' }, pictures[1]!.file);
  const b = await predictForm('uploaded', { conf: '0.01' }, pictures[1]!.file);
  t.strictSame(b.body.images[0]!.results, a.body.images[0]!.results);
});

t.test('ul cloud predict model=ul://… source=image saves an annotated image', async (t) => {
  const work = join(dir, 'user');
  mkdirSync(work, { recursive: true });
  const source = pictures[0]!.file;
  const env = {
    ...process.env,
    ULTRALYTICS_PLATFORM_URL: server.url,
    ULTRALYTICS_API_KEY: alice,
    YOLO_CONFIG_DIR: join(work, 'config'),
    YOLO_OFFLINE: '1',
  };
  const predicted = await run(
    join(TRAINER, 'bin/ul'),
    [
      'cloud',
      'predict',
      'model=ul://alice/vision/shapes',
      `source=${source}`,
      'conf=0.01',
      `project=${join(work, 'runs')}`,
      'name=predict',
    ],
    { cwd: work, env },
  );
  t.equal(predicted.code, 0, (predicted.out + predicted.err).slice(-3000));
  // YOLO's writer saves images as JPEG under the source's name.
  const savedName = readdirSync(join(work, 'runs', 'predict')).find((name) =>
    name.startsWith(`${basename(source, extname(source))}.`),
  );
  t.ok(savedName, `the annotated image is saved: ${(predicted.out + predicted.err).slice(-1000)}`);
  const saved = await sharp(join(work, 'runs', 'predict', savedName!))
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const original = await sharp(source).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  t.strictSame(
    [saved.info.width, saved.info.height],
    [original.info.width, original.info.height],
    'at the size of the source',
  );
  let changed = 0;
  for (let index = 0; index < saved.data.length; index += 1)
    if (Math.abs(saved.data[index]! - original.data[index]!) > 60) changed += 1;
  t.ok(changed > 100, `with the predictions drawn on it (${changed} channel values changed beyond JPEG noise)`);
  const results = JSON.parse(readFileSync(join(work, 'runs', 'predict', 'results.json'), 'utf8')) as {
    images: Array<{ results: Row[] }>;
  };
  t.ok(results.images[0]!.results.length > 0, 'the answer it drew had boxes');
});
