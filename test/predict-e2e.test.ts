// Model predict end to end: a trained model's weights uploaded through the API get their ONNX export automatically
// from a real worker agent (process runtime, the trainer venv, real `yolo export`); then the ultralytics-platform SDK's
// models.predict answers what ultralytics' own predict gives on that same ONNX artifact (boxes IoU > 0.99, confidences
// within 1e-3), and `ul cloud predict` saves an annotated image from the answer.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import t from 'tap';
import { enrollAgent, runAgent } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { call } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TRAINER = join(ROOT, '.venv-trainer');
const SDK_PYTHON = join(ROOT, '.venv-sdk/bin/python');
if (!existsSync(join(TRAINER, 'bin/yolo')) || !existsSync(SDK_PYTHON)) throw new Error('no trainer or SDK environment (.venv-trainer, .venv-sdk): run .ci/run');

const fixture = await trainedModel('detect');
const world = await startWorld(t, { WORKER_HEARTBEAT_SECONDS: '1', RATE_LIMIT_PREDICT: '1000', PREDICT_EXPORT_WAIT_SECONDS: '300' });
const { server, alice } = world;
const dir = mkdtempSync(join(tmpdir(), 'vp-predict-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd ?? dir, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
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
const agent = runAgent(t, config, { VP_WORKER_RUNTIME: 'process', VP_WORKER_WORK_DIR: join(dir, 'work'), VP_WORKER_PROCESS_VENV: TRAINER });
const exporters = async () => (await server.services().em.getConnection().execute(`select exporters from hosts where name = 'predict-host' and state = 'connected'`))[0]?.exporters as string[] | undefined;
await eventually(async () => (await exporters())?.includes('onnx'), `the host to report its exporters:\n${agent.output().slice(-3000)}`, 120_000);

// The weights arrive through the upload API: that alone queues the ONNX export.
await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, { project: 'vision', model: 'shapes', task: 'detect', trainArgs: { imgsz: fixture.imgsz } });
await uploadWeights(world, alice, model.id, readFileSync(fixture.pt), 'shapes.pt');
interface ExportView { id: string; format: string; status: string; args: Record<string, unknown>; file?: { downloadUrl: string }; error?: { message: string } }
const onnxExport = await eventually(async () => {
  const list = await call<{ exports: ExportView[] }>(server, 'GET', '/api/models/alice/vision/shapes/exports', { key: alice });
  const view = list.body.exports.find((candidate) => candidate.format === 'onnx');
  return view && ['completed', 'failed', 'cancelled'].includes(view.status) && view;
}, `the automatic ONNX export to end:\n${agent.output().slice(-3000)}`, 300_000);
const artifact = join(dir, 'shapes.onnx');
if (onnxExport.file) writeFileSync(artifact, Buffer.from(await (await fetch(onnxExport.file.downloadUrl)).arrayBuffer()));
const pictures = (await writeTestPictures(dir)).filter((picture) => /\.(png|jpg)$/.test(picture.file));

t.test('the upload queued an ONNX export (dynamic, at the training size) that the host completed', async (t) => {
  t.equal(onnxExport.status, 'completed', onnxExport.error?.message ?? agent.output().slice(-3000));
  t.match(onnxExport.args, { dynamic: true, imgsz: Math.ceil(fixture.imgsz / 32) * 32 });
  t.ok(existsSync(artifact) && readFileSync(artifact).length > 1000, 'the artifact downloads');
});

interface Row { name: string; class: number; confidence: number; box: { x1: number; y1: number; x2: number; y2: number } }
interface Reference { shape: number[]; boxes: number[][]; conf: number[]; cls: number[] }

const iou = (a: number[], b: number[]) => {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = w * h;
  const union = (a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter;
  return union > 0 ? inter / union : a.every((v, i) => v === b[i]) ? 1 : 0;
};

t.test("the SDK's models.predict answers what ultralytics predicts on the same ONNX", async (t) => {
  // The training size (the default) and a larger one with a lower IoU threshold; conf at the API's minimum.
  const runs = [{ conf: 0.01, iou: 0.7, imgsz: fixture.imgsz }, { conf: 0.01, iou: 0.5, imgsz: 2 * fixture.imgsz }];
  const reference = await run(join(TRAINER, 'bin/python'), [join(ROOT, 'test/inference/ultralytics_reference.py'), 'predict', artifact, 'detect', '--runs', JSON.stringify(runs), ...pictures.map((p) => p.file)]);
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
  const sdk = await run(SDK_PYTHON, ['-c', script, JSON.stringify(runs), ...pictures.map((p) => p.file)], { env: { ...process.env, KEY: alice, URL: server.url } });
  t.equal(sdk.code, 0, sdk.err.slice(-2000));
  const answers = JSON.parse(sdk.out) as Array<{ images: Array<{ shape: number[]; results: Row[] }>; metadata: { task: string; classNames: string[] } }>;
  let compared = 0;
  runs.flatMap((options) => pictures.map((picture) => `${picture.label} at ${options.imgsz}`)).forEach((label, index) => {
    const picture = { label };
    const answer = answers[index]!;
    const want = expected[index]!;
    t.strictSame(answer.images[0]!.shape, want.shape, `${picture.label}: shape`);
    t.equal(answer.metadata.task, 'detect');
    t.strictSame(answer.metadata.classNames, fixture.names);
    const rows = answer.images[0]!.results;
    t.equal(rows.length, want.boxes.length, `${picture.label}: as many boxes as ultralytics (${want.boxes.length})`);
    rows.forEach((row, k) => {
      const box = [row.box.x1, row.box.y1, row.box.x2, row.box.y2];
      t.equal(row.class, want.cls[k], `${picture.label} #${k}: class`);
      t.equal(row.name, fixture.names[want.cls[k]!]);
      t.ok(iou(box, want.boxes[k]!) > 0.99, `${picture.label} #${k}: IoU ${iou(box, want.boxes[k]!).toFixed(4)} > 0.99`);
      t.ok(Math.abs(row.confidence - want.conf[k]!) < 1e-3, `${picture.label} #${k}: confidence ${row.confidence} vs ${want.conf[k]}`);
      compared += 1;
    });
  });
  t.ok(compared > 0, `there were boxes to compare (${compared})`);
});

t.test('ul cloud predict model=ul://… source=image saves an annotated image', async (t) => {
  const work = join(dir, 'user');
  mkdirSync(work, { recursive: true });
  const source = pictures.find((picture) => picture.file.endsWith('square.png'))!.file;
  const env = { ...process.env, ULTRALYTICS_PLATFORM_URL: server.url, ULTRALYTICS_API_KEY: alice, YOLO_CONFIG_DIR: join(work, 'config'), YOLO_OFFLINE: '1' };
  const predicted = await run(join(TRAINER, 'bin/ul'), ['cloud', 'predict', 'model=ul://alice/vision/shapes', `source=${source}`, 'conf=0.01', `project=${join(work, 'runs')}`, 'name=predict'], { cwd: work, env });
  t.equal(predicted.code, 0, (predicted.out + predicted.err).slice(-3000));
  // YOLO's writer saves images as JPEG under the source's name.
  const savedName = readdirSync(join(work, 'runs', 'predict')).find((name) => name.startsWith(`${basename(source, extname(source))}.`));
  t.ok(savedName, `the annotated image is saved: ${(predicted.out + predicted.err).slice(-1000)}`);
  const saved = await sharp(join(work, 'runs', 'predict', savedName!)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const original = await sharp(source).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  t.strictSame([saved.info.width, saved.info.height], [original.info.width, original.info.height], 'at the size of the source');
  let changed = 0;
  for (let index = 0; index < saved.data.length; index += 1) if (Math.abs(saved.data[index]! - original.data[index]!) > 60) changed += 1;
  t.ok(changed > 100, `with the predictions drawn on it (${changed} channel values changed beyond JPEG noise)`);
  const results = JSON.parse(readFileSync(join(work, 'runs', 'predict', 'results.json'), 'utf8')) as { images: Array<{ results: Row[] }> };
  t.ok(results.images[0]!.results.length > 0, 'the answer it drew had boxes');
});
