// Predict on ONNX exports a tenant made hostile or broken, over HTTP against a real control plane and real onnxruntime,
// the exports crafted in the test: metadata out of bounds and a segment model without prototypes are a clear 422;
// NaN or Infinity in the outputs gives an answer that is valid JSON; a graph that expands to gigabytes is stopped at
// its workspace's worker memory bound, and another workspace's predicts keep answering meanwhile, the control plane's
// own memory unchanged.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { constantDetector, craftOnnx, ultralyticsMetadata } from './helpers/onnx-craft.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { startWorld } from './helpers/world.ts';

const CACHE_BYTES = 512 * 2 ** 20;
const world = await startWorld(t, {
  PREDICT_WORKERS: '1',
  PREDICT_CACHE_BYTES: String(CACHE_BYTES),
  RATE_LIMIT_PREDICT: '100000',
});
const { server, alice, bobby } = world;
const dir = mkdtempSync(join(tmpdir(), 'hostile-predict-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const picture = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#808080' } })
  .jpeg()
  .toBuffer();

interface Answer {
  error?: string;
  images: Array<{ results: Array<{ name: string; class: number; confidence: number; box: Record<string, number> }> }>;
}

async function predict(
  owner: string,
  slug: string,
  key: string,
  fields: Record<string, string> = {},
): Promise<{ status: number; body: Answer; ms: number }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([picture], { type: 'image/jpeg' }), 'image.jpg');
  const started = performance.now();
  const response = await fetch(`${server.url}/api/models/${owner}/models/${slug}/predict`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as Answer, ms: performance.now() - started };
}

/** A model of `key`'s in its project "models" whose automatic ONNX export is `onnx`. */
async function modelWithExport(key: string, slug: string, task: string, onnx: Buffer): Promise<void> {
  const model = await createModel(world, key, { project: 'models', model: slug, task });
  await uploadWeights(world, key, model.id, randomBytes(1000));
  const file = join(dir, `${slug}.onnx`);
  writeFileSync(file, onnx);
  await seedOnnxExport(server, model.id, file);
}

await createProject(world, alice, { project: 'models', name: 'models' });
await createProject(world, bobby, { project: 'models', name: 'models' });
const oneRow = [[32], [32], [16], [16], [0.9]];
await modelWithExport(bobby, 'good', 'detect', constantDetector(oneRow, ['thing']));
await modelWithExport(
  alice,
  'names',
  'detect',
  craftOnnx({
    inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
    outputs: [{ name: 'output0', shape: [1, 'c', 'n'] }],
    nodes: [{ op: 'Identity', inputs: ['images'], outputs: ['output0'] }],
    metadata: ultralyticsMetadata('detect', "{100000000: 'x'}"),
  }),
);
await modelWithExport(
  alice,
  'segment',
  'segment',
  craftOnnx({
    inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
    outputs: [{ name: 'output0', shape: [1, 'c', 'n'] }],
    nodes: [{ op: 'Identity', inputs: ['images'], outputs: ['output0'] }],
    metadata: ultralyticsMetadata('segment', "{0: 'thing'}"),
  }),
);
await modelWithExport(
  alice,
  'nan',
  'detect',
  constantDetector(
    [
      [32, Number.NaN],
      [32, 10],
      [16, 10],
      [16, 10],
      [0.9, Number.POSITIVE_INFINITY],
    ],
    ['thing'],
  ),
);
// Tile repeats the input (at imgsz 640, which the attacker asks for) 1,000 times: GBs of float32, sizes symbolic in the graph.
await modelWithExport(
  alice,
  'tile',
  'detect',
  craftOnnx({
    inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
    outputs: [{ name: 'output0', shape: [1, 'c', 'n'] }],
    nodes: [
      { op: 'Tile', inputs: ['images', 'repeats'], outputs: ['tiled'] },
      { op: 'Reshape', inputs: ['tiled', 'rows'], outputs: ['output0'] },
    ],
    initializers: [
      { name: 'repeats', dims: [4], data: BigInt64Array.of(1n, 1n, 1000n, 1n) },
      { name: 'rows', dims: [3], data: BigInt64Array.of(1n, 5n, -1n) },
    ],
    metadata: ultralyticsMetadata('detect', "{0: 'thing'}"),
  }),
);

t.test('metadata out of bounds, or a segment model without prototypes: a clear 422, fast', async (t) => {
  const names = await predict('alice', 'names', alice);
  t.equal(names.status, 422, JSON.stringify(names.body));
  t.match(names.body.error, /ONNX export cannot be run: .*index 100000000/);
  t.ok(names.ms < 5000, `answered in ${Math.round(names.ms)} ms`);
  const segment = await predict('alice', 'segment', alice);
  t.equal(segment.status, 422, JSON.stringify(segment.body));
  t.match(segment.body.error, /segment model without its mask prototypes/);
  t.equal((await predict('bobby', 'good', bobby)).status, 200, 'the other workspace predicts');
});

t.test('NaN and Infinity in the outputs: a valid answer without those rows', async (t) => {
  const answer = await predict('alice', 'nan', alice);
  t.equal(answer.status, 200, JSON.stringify(answer.body));
  t.equal(answer.body.images[0]!.results.length, 1, 'the finite row only');
  t.equal(answer.body.images[0]!.results[0]!.name, 'thing');
});

t.test(
  'a graph that expands to gigabytes: 422 at the worker memory bound; another workspace keeps answering',
  async (t) => {
    t.equal((await predict('bobby', 'good', bobby)).status, 200, 'warm');
    const rssBefore = process.memoryUsage.rss();
    let done = false;
    const bobbyTimes: number[] = [];
    const bobbyLoop = (async () => {
      while (!done) {
        const answer = await predict('bobby', 'good', bobby);
        if (answer.status !== 200)
          throw new Error(`bobby's predict answered ${answer.status}: ${JSON.stringify(answer.body)}`);
        bobbyTimes.push(answer.ms);
      }
    })();
    const hostile = [];
    for (let i = 0; i < 2; i++) hostile.push(await predict('alice', 'tile', alice, { imgsz: '640' }));
    done = true;
    await bobbyLoop;
    for (const answer of hostile) {
      t.equal(answer.status, 422, JSON.stringify(answer.body));
      t.match(answer.body.error, /more than the 768 MiB of memory an inference worker may use/);
      t.ok(answer.ms < 30_000, `stopped after ${Math.round(answer.ms)} ms`);
    }
    const worst = Math.max(...bobbyTimes);
    t.ok(
      bobbyTimes.length > 0 && worst < 3000,
      `bobby's ${bobbyTimes.length} predicts meanwhile took at most ${Math.round(worst)} ms`,
    );
    const grew = process.memoryUsage.rss() - rssBefore;
    t.ok(grew < 150 * 2 ** 20, `the control plane grew ${Math.round(grew / 2 ** 20)} MiB`);
    t.equal((await predict('alice', 'nan', alice)).status, 200, "alice's other models still answer");
  },
);
