// The pool's lanes: requests that overlap on one model are served by its lane sessions, in processes of their own,
// and each still gets its own answer; they go once idle; a lone request, and a pool without lanes, use the model's one
// main process.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { InferencePool, type PoolOptions } from '../inference/src/pool/index.ts';
import { childPids, waitFor } from './helpers/child-processes.ts';
import { constantDetector } from './helpers/onnx-craft.ts';

const dir = mkdtempSync(join(tmpdir(), 'lanes-onnx-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const model = constantDetector([[32], [32], [16], [16], [0.9]], ['a']);
const artifact = { key: 'box', file: join(dir, 'box.onnx'), bytes: model.length };
writeFileSync(artifact.file, model);
const picture = await sharp({ create: { width: 80, height: 60, channels: 3, background: '#808080' } })
  .png()
  .toBuffer();
const options = (conf: number) => ({ conf, iou: 0.7, imgsz: 64 });
/** Six requests at once, asking alternately for the one box (conf 0.25) and for none (conf 0.95, above its score). */
const confs = [0.25, 0.95, 0.25, 0.95, 0.25, 0.95];

async function overlapping(t: Test, pool: InferencePool): Promise<void> {
  const lone = await pool.run(artifact, picture, options(0.25), 1e8);
  t.equal(childPids().length, 1, 'a lone request runs in the main process');
  const answers = await sixAtOnce(t, pool, 'each overlapping request gets its own answer');
  t.same(answers[0]!.prediction.boxes, lone.prediction.boxes, 'the same boxes as the lone request');
}

async function sixAtOnce(t: Test, pool: InferencePool, message: string) {
  const answers = await Promise.all(confs.map((conf) => pool.run(artifact, picture, options(conf), 1e8)));
  t.same(
    answers.map((answer) => answer.prediction.boxes.length),
    [1, 0, 1, 0, 1, 0],
    message,
  );
  return answers;
}

const poolOptions: PoolOptions = { workers: 1, intraOpThreads: 2, spinning: true, cacheBytes: 2 ** 30 };

t.test('with lanes, overlapping requests of a model are spread over two more processes', async (t) => {
  const pool = new InferencePool({ ...poolOptions, laneThreads: 1, laneIdleMs: 500 });
  t.teardown(() => pool.close());
  await overlapping(t, pool);
  t.equal(childPids().length, 3, 'the main process and two lanes');
  await waitFor(() => childPids().length === 1);
  t.equal(childPids().length, 1, 'the lanes go once idle');
  await sixAtOnce(t, pool, 'they come back with the next overlap');
  t.equal(childPids().length, 3, 'three processes again');
  await pool.close();
  await waitFor(() => childPids().length === 0);
  t.same(childPids(), [], 'closing the pool stops the lanes too');
});

t.test('without lanes, they all run in the model’s one process', async (t) => {
  const pool = new InferencePool(poolOptions);
  t.teardown(() => pool.close());
  await overlapping(t, pool);
  t.equal(childPids().length, 1, 'one process');
});
