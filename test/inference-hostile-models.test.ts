// ONNX files a tenant controls, made by hand in the test: metadata out of every bound and graphs that declare what no
// export gives are refused at load with a clear InvalidModel, before a session runs; outputs of NaN or Infinity give
// rows JSON can carry; and in the pool, a graph that expands to gigabytes is stopped at the worker's memory bound,
// in its own partition's process, while another partition's predicts keep answering.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { decodeImage, OnnxModel } from '../inference/src/index.ts';
import { InferenceError, InferencePool } from '../inference/src/pool/index.ts';
import { childPids, treeRss, waitFor } from './helpers/child-processes.ts';
import { constantDetector, craftOnnx, pythonNames, ultralyticsMetadata } from './helpers/onnx-craft.ts';

const dir = mkdtempSync(join(tmpdir(), 'hostile-onnx-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, bytes: Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
};
const picture = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#808080' } })
  .png()
  .toBuffer();

/** A detect export with `metadata` (over the defaults) and a plain output [1, 5, 2]. */
const withMetadata = (metadata: Record<string, string>) =>
  craftOnnx({ ...identityGraph([1, 5, 2]), metadata: { ...ultralyticsMetadata('detect', "{0: 'a'}"), ...metadata } });

function identityGraph(
  outputShape: Array<number | string>,
  extraOutputs: Array<{ name: string; shape: Array<number | string> }> = [],
) {
  return {
    inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
    outputs: [{ name: 'output0', shape: outputShape }, ...extraOutputs],
    nodes: [
      { op: 'Identity', inputs: ['images'], outputs: ['output0'] },
      ...extraOutputs.map((output) => ({ op: 'Identity', inputs: ['images'], outputs: [output.name] })),
    ],
  };
}

t.test('metadata out of bounds is refused before a session is made, fast', async (t) => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['a class index of 100,000,000', { names: "{100000000: 'x'}" }, /index 100000000/],
    ['a negative class index', { names: "{0: 'a', -1: 'b'}" }, /index -1/],
    [
      '30,000 classes',
      { names: pythonNames(Array.from({ length: 30_000 }, (_, i) => `c${i}`)) },
      /30000 classes; at most 25000/,
    ],
    ['a 1,000-character class name', { names: `{0: '${'x'.repeat(1000)}'}` }, /longer than 256/],
    ['an index given twice', { names: "{0: 'a', '0': 'b'}" }, /twice/],
    ['imgsz 100,000', { imgsz: '[100000, 100000]' }, /imgsz must be an integer from 1 to 4096/],
    ['imgsz of text', { imgsz: "['a', 'b']" }, /imgsz/],
    ['stride 0', { stride: '0' }, /stride must be an integer/],
    ['kpt_shape of a million keypoints', { task: 'pose', kpt_shape: '[1000000, 3]' }, /kpt_shape keypoints/],
    ['an unknown task', { task: 'x'.repeat(10_000) }, /task 'x{40}', which is not supported/],
  ];
  for (const [label, metadata, message] of cases) {
    const started = performance.now();
    await t.rejects(
      OnnxModel.load(file('meta.onnx', withMetadata(metadata))),
      { name: 'InvalidModel', message },
      label,
    );
    t.ok(performance.now() - started < 2000, `${label}: refused in ${Math.round(performance.now() - started)} ms`);
  }
});

t.test('a graph that declares what no export gives is refused at load', async (t) => {
  const names = { names: "{0: 'a'}" };
  const refused: Array<[string, Buffer, RegExp]> = [
    [
      'a segment model without its mask prototypes',
      craftOnnx({ ...identityGraph([1, 37, 'n']), metadata: ultralyticsMetadata('segment', names.names) }),
      /segment model without its mask prototypes/,
    ],
    [
      'an output declared 100,000 × 100,000',
      craftOnnx({
        inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
        outputs: [{ name: 'output0', shape: [1, 100_000, 100_000] }],
        nodes: [{ op: 'Reshape', inputs: ['images', 'huge'], outputs: ['output0'] }],
        initializers: [{ name: 'huge', dims: [3], data: BigInt64Array.of(1n, 100_000n, 100_000n) }],
        metadata: ultralyticsMetadata('detect', names.names),
      }),
      /more than 33554432 elements/,
    ],
    [
      'a first output of rank 4 for detect',
      withMetadataGraph(identityGraph([1, 3, 'h', 'w'])),
      /not what a detect model gives/,
    ],
    [
      'a static input other than imgsz',
      craftOnnx({
        ...identityGraph([1, 5, 2]),
        inputs: [{ name: 'images', shape: [1, 3, 640, 640] }],
        metadata: { ...ultralyticsMetadata('detect', names.names), imgsz: '[64, 64]' },
      }),
      /not the export's imgsz 64 × 64/,
    ],
    [
      'two inputs',
      craftOnnx({
        ...identityGraph([1, 5, 2]),
        inputs: [
          { name: 'images', shape: [1, 3, 'h', 'w'] },
          { name: 'other', shape: [1] },
        ],
        metadata: ultralyticsMetadata('detect', names.names),
      }),
      /2 inputs/,
    ],
  ];
  for (const [label, bytes, message] of refused)
    await t.rejects(OnnxModel.load(file('graph.onnx', bytes)), { name: 'InvalidModel', message }, label);

  function withMetadataGraph(graph: ReturnType<typeof identityGraph>): Buffer {
    return craftOnnx({ ...graph, metadata: ultralyticsMetadata('detect', names.names) });
  }
});

t.test(
  'a run that fails, or gives no mask prototypes, fails as the model’s (InvalidModel), not as a crash',
  async (t) => {
    // Reshapes of the 1 × 3 × 64 × 64 input: [1, rows, -1] as output0, and [1, -1] (rank 2) where the prototypes go.
    const segment = (rows: bigint) =>
      craftOnnx({
        inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
        outputs: [
          { name: 'output0', shape: [1, 'c', 'n'] },
          { name: 'output1', shape: ['a', 'b', 'c', 'd'] },
        ],
        nodes: [
          { op: 'Reshape', inputs: ['images', 'rows'], outputs: ['output0'] },
          { op: 'Reshape', inputs: ['images', 'flat'], outputs: ['output1'] },
        ],
        initializers: [
          { name: 'rows', dims: [3], data: BigInt64Array.of(1n, rows, -1n) },
          { name: 'flat', dims: [2], data: BigInt64Array.of(1n, -1n) },
        ],
        metadata: ultralyticsMetadata('segment', "{0: 'a'}"),
      });
    const image = await decodeImage(picture, { maxPixels: 1e8 });
    const options = { conf: 0.25, iou: 0.7, imgsz: 64 };
    const flat = await OnnxModel.load(file('protos.onnx', segment(48n)), { intraOpThreads: 1 });
    t.teardown(() => flat.release());
    await t.rejects(
      flat.predict(image, options),
      { name: 'InvalidModel', message: /no mask prototypes/ },
      'prototypes of rank 2',
    );
    const broken = await OnnxModel.load(file('broken.onnx', segment(38n)), { intraOpThreads: 1 });
    t.teardown(() => broken.release());
    await t.rejects(
      broken.predict(image, options),
      { name: 'InvalidModel', message: /graph failed to run/ },
      '12,288 values do not reshape to 38 rows',
    );
  },
);

t.test('NaN and Infinity in the outputs: those rows are dropped, the others answered', async (t) => {
  // Four anchors of [x, y, w, h, score a, score b]: a good row, an infinite score, a NaN box, an infinite box.
  const rows = [
    [32, 10, Number.NaN, Number.POSITIVE_INFINITY],
    [32, 10, 20, 20],
    [16, 10, 10, 10],
    [16, 10, 10, 10],
    [0.9, Number.POSITIVE_INFINITY, 0.8, 0.7],
    [0.1, 0.1, 0.1, 0.1],
  ];
  const model = await OnnxModel.load(file('nan.onnx', constantDetector(rows, ['a', 'b'])), { intraOpThreads: 1 });
  t.teardown(() => model.release());
  const prediction = await model.predict(await decodeImage(picture, { maxPixels: 1e8 }), {
    conf: 0.25,
    iou: 0.7,
    imgsz: 64,
  });
  t.equal(prediction.boxes.length, 1, 'only the finite row');
  t.ok(
    prediction.boxes.flat().every(Number.isFinite) && prediction.confidences.every(Number.isFinite),
    'every number finite',
  );
  t.equal(prediction.confidences[0], Math.fround(0.9));
});

t.test(
  'a graph that expands to gigabytes is stopped at its worker’s memory bound; another partition keeps answering',
  async (t) => {
    // Tile repeats the 64 × 64 input 20,000 times along its height: 3 × 1,280,000 × 64 float32 = 983 MB; declared rank 3
    // with symbolic sizes, so nothing about it is known before it runs.
    const tile = craftOnnx({
      inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
      outputs: [{ name: 'output0', shape: [1, 'c', 'n'] }],
      nodes: [
        { op: 'Tile', inputs: ['images', 'repeats'], outputs: ['tiled'] },
        { op: 'Reshape', inputs: ['tiled', 'rows'], outputs: ['output0'] },
      ],
      initializers: [
        { name: 'repeats', dims: [4], data: BigInt64Array.of(1n, 1n, 20_000n, 1n) },
        { name: 'rows', dims: [3], data: BigInt64Array.of(1n, 5n, -1n) },
      ],
      metadata: ultralyticsMetadata('detect', "{0: 'a'}", { args: "{'dynamic': False}" }),
    });
    const good = constantDetector([[32], [32], [16], [16], [0.9]], ['a']);
    const memoryBytes = 400 * 2 ** 20;
    const pool = new InferencePool({
      workers: 1,
      intraOpThreads: 1,
      spinning: false,
      cacheBytes: 256 * 2 ** 20,
      workerMemoryBytes: memoryBytes,
    });
    t.teardown(() => pool.close());
    const hostile = { key: 'tile', file: file('tile.onnx', tile), bytes: tile.length, partition: 'mallory' };
    const friendly = { key: 'good', file: file('good.onnx', good), bytes: good.length, partition: 'alice' };
    const options = { conf: 0.25, iou: 0.7, imgsz: 64 };
    t.equal((await pool.run(friendly, picture, options, 1e8)).prediction.boxes.length, 1, 'the friendly model answers');

    const rssBefore = process.memoryUsage.rss();
    let peakTree = 0;
    const watching = setInterval(() => (peakTree = Math.max(peakTree, treeRss())), 20);
    let friendlyWorst = 0;
    let friendlyRuns = 0;
    let hostileDone = false;
    const friendlyLoop = (async () => {
      while (!hostileDone) {
        const started = performance.now();
        await pool.run(friendly, picture, options, 1e8);
        friendlyWorst = Math.max(friendlyWorst, performance.now() - started);
        friendlyRuns++;
      }
    })();
    const started = performance.now();
    for (let i = 0; i < 3; i++) {
      const failed = await pool.run(hostile, picture, options, 1e8).then(
        () => undefined,
        (error: unknown) => error,
      );
      t.ok(failed instanceof InferenceError && failed.kind === 'model', `hostile run ${i + 1} failed as the model's`);
      t.match((failed as Error).message, /more than the 400 MiB of memory an inference worker may use/);
    }
    const hostileMs = performance.now() - started;
    hostileDone = true;
    await friendlyLoop;
    clearInterval(watching);
    t.ok(hostileMs < 30_000, `three hostile runs stopped in ${Math.round(hostileMs)} ms`);
    t.ok(
      friendlyRuns > 0 && friendlyWorst < 3000,
      `the other partition answered ${friendlyRuns} times meanwhile, the slowest in ${Math.round(friendlyWorst)} ms`,
    );
    t.ok(
      process.memoryUsage.rss() - rssBefore < 100 * 2 ** 20,
      `this process grew ${Math.round((process.memoryUsage.rss() - rssBefore) / 2 ** 20)} MiB`,
    );
    t.ok(
      peakTree < 2 * memoryBytes + 400 * 2 ** 20,
      `the worker processes peaked at ${Math.round(peakTree / 2 ** 20)} MiB together`,
    );
    t.equal((await pool.run(friendly, picture, options, 1e8)).prediction.boxes.length, 1, 'and still answers after');
  },
);

t.test(
  'a graph that computes without answering is stopped when its worker stalls; another partition keeps answering',
  async (t) => {
    // Forty products of 2048 × 2048 matrices made from the input (so nothing is folded at load): 16 MB each, and several
    // seconds of work even where one core multiplies at 100 GFLOP/s, well past the 3 s the pool waits (long enough that
    // the friendly partition's tiny runs are never taken for a stall on a loaded machine).
    const products = Array.from({ length: 40 }, (_, i) => ({
      op: 'MatMul',
      inputs: [i === 0 ? 'square' : `p${i - 1}`, 'square'],
      outputs: [`p${i}`],
    }));
    const slow = craftOnnx({
      inputs: [{ name: 'images', shape: [1, 3, 'h', 'w'] }],
      outputs: [{ name: 'output0', shape: [1, 'c', 'n'] }],
      nodes: [
        { op: 'ReduceSum', inputs: ['images'], outputs: ['total'], attributes: { keepdims: 0 } },
        { op: 'ConstantOfShape', inputs: ['side'], outputs: ['zeros'] },
        { op: 'Add', inputs: ['zeros', 'total'], outputs: ['square'] },
        ...products,
        { op: 'Reshape', inputs: ['p39', 'rows'], outputs: ['output0'] },
      ],
      initializers: [
        { name: 'side', dims: [2], data: BigInt64Array.of(2048n, 2048n) },
        { name: 'rows', dims: [3], data: BigInt64Array.of(1n, 4096n, 1024n) },
      ],
      metadata: ultralyticsMetadata('detect', "{0: 'a'}"),
    });
    const good = constantDetector([[32], [32], [16], [16], [0.9]], ['a']);
    const pool = new InferencePool({
      workers: 1,
      intraOpThreads: 1,
      spinning: false,
      cacheBytes: 2 ** 30,
      workerStallMs: 3000,
    });
    t.teardown(() => pool.close());
    const options = { conf: 0.25, iou: 0.7, imgsz: 64 };
    const friendly = { key: 'good', file: file('good-2.onnx', good), bytes: good.length, partition: 'alice' };
    await pool.run(friendly, picture, options, 1e8);
    let done = false;
    let worst = 0;
    const friendlyLoop = (async () => {
      while (!done) {
        const started = performance.now();
        await pool.run(friendly, picture, options, 1e8);
        worst = Math.max(worst, performance.now() - started);
      }
    })();
    const started = performance.now();
    const failed = await pool
      .run(
        { key: 'slow', file: file('slow.onnx', slow), bytes: slow.length, partition: 'mallory' },
        picture,
        options,
        1e8,
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    const took = performance.now() - started;
    done = true;
    await friendlyLoop;
    t.match(failed, { kind: 'model', message: /gave no answer for 3 s, and was stopped/ }, 'stopped as the model’s');
    t.ok(took < 20_000, `after ${Math.round(took)} ms`);
    // Against the stalled one's wait, not a clock: a loaded machine slows both alike.
    t.ok(worst < took / 3, `the other partition answered meanwhile, the slowest in ${Math.round(worst)} ms`);
  },
);

t.test('a file refused at load is remembered: asking again answers at once and starts no process', async (t) => {
  const bad = withMetadata({ names: "{100000000: 'x'}" });
  const pool = new InferencePool({ workers: 1, intraOpThreads: 1, spinning: false, cacheBytes: 2 ** 30 });
  t.teardown(() => pool.close());
  const artifact = { key: 'bad', file: file('refused.onnx', bad), bytes: bad.length, partition: 'mallory' };
  const options = { conf: 0.25, iou: 0.7, imgsz: 64 };
  const first = await pool.run(artifact, picture, options, 1e8).catch((error: unknown) => error);
  t.ok(first instanceof InferenceError && first.kind === 'model', 'refused as the model’s');
  t.match((first as Error).message, /index 100000000/);
  await waitFor(() => childPids().length === 0);
  t.same(childPids(), [], 'its process has gone');
  const started = performance.now();
  const again = await pool.run(artifact, picture, options, 1e8).catch((error: unknown) => error);
  t.match(again, { kind: 'model', message: /index 100000000/ }, 'refused again');
  t.ok(performance.now() - started < 50, `at once (${(performance.now() - started).toFixed(1)} ms)`);
  t.same(childPids(), [], 'without a process');
});

t.test('a session is counted by the memory its load took, not a flat estimate', async (t) => {
  const good = constantDetector([[32], [32], [16], [16], [0.9]], ['a']);
  const pool = new InferencePool({ workers: 1, intraOpThreads: 1, spinning: false, cacheBytes: 2 ** 30 });
  t.teardown(() => pool.close());
  await pool.load({ key: 'good', file: file('count.onnx', good), bytes: good.length });
  const counted = (pool as unknown as { resident: Map<string, { bytes: number }> }).resident.get('good')!.bytes;
  t.ok(counted < 64 * 2 ** 20, `a ${good.length}-byte model counts ${Math.round(counted / 2 ** 10)} KiB`);
});

t.test('processes count in the cache: many workspaces with small models do not keep a process each', async (t) => {
  const good = constantDetector([[32], [32], [16], [16], [0.9]], ['a']);
  const pool = new InferencePool({ workers: 1, intraOpThreads: 1, spinning: false, cacheBytes: 400 * 2 ** 20 });
  t.teardown(() => pool.close());
  const options = { conf: 0.25, iou: 0.7, imgsz: 64 };
  let most = 0;
  for (let i = 0; i < 6; i++) {
    await pool.run(
      { key: `model-${i}`, file: file(`small-${i}.onnx`, good), bytes: good.length, partition: `workspace-${i}` },
      picture,
      options,
      1e8,
    );
    most = Math.max(most, childPids().length);
  }
  await waitFor(() => childPids().length <= 3);
  t.ok(most <= 4, `at most ${most} processes lived at once for 6 workspaces`);
  t.ok(childPids().length <= 3, `${childPids().length} processes left`);
});
