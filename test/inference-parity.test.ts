// @vp/inference predicts what ultralytics' own predict predicts on the same ONNX export: for every task and both heads
// (NMS and end2end), on PNGs and JPEGs of several sizes and aspect ratios, an EXIF-rotated JPEG, a grayscale and an RGBA
// PNG, at several conf / iou / imgsz / max_det settings; and summarize() is Results.summary().
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { decodeImage, OnnxModel, type Prediction, summarize } from '../inference/src/index.ts';
import { type TestPicture, writeTestPictures } from './helpers/inference-images.ts';
import {
  exportedVariant,
  type FixtureTask,
  runCommand,
  TRAINER_VENV,
  trainedModel,
  trainerEnv,
} from './helpers/yolo-models.ts';

// The first run trains the fixture models (a few minutes on 2 cores); later runs take them from .cache/test-models.
t.setTimeout(20 * 60_000);

interface Reference {
  /** Where ultralytics itself failed on the image (an end2end export on a too small input). */
  error?: string;
  shape: [number, number];
  boxes?: number[][];
  conf?: number[];
  cls?: number[];
  polygons?: number[][];
  keypoints?: number[][][];
  probs?: number[];
  /** The class map, base64 of uint8 row-major at the original size. */
  semantic?: string;
  /** The depth map, base64 of float32 row-major at the original size. */
  depth?: string;
  summaries: Record<string, Record<string, unknown>[]>;
}

interface Run {
  imgsz: number;
  conf: number;
  iou: number;
  max_det: number;
}

const RUNS: Run[] = [
  { imgsz: 96, conf: 0.001, iou: 0.7, max_det: 300 },
  { imgsz: 128, conf: 0.01, iou: 0.45, max_det: 300 },
  { imgsz: 70, conf: 0.003, iou: 0.3, max_det: 5 }, // 70 is rounded up to the stride (96)
];

const work = mkdtempSync(join(tmpdir(), 'inference-parity-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const scenes = writeTestPictures(mkdtempSync(join(work, 'scenes-')));

async function reference(
  onnx: string,
  task: FixtureTask,
  pictures: TestPicture[],
  runs: Run[],
): Promise<Reference[][]> {
  const out = await runCommand(
    join(TRAINER_VENV, 'bin/python'),
    [
      'test/inference/ultralytics_reference.py',
      'predict',
      onnx,
      task,
      '--runs',
      JSON.stringify(runs),
      ...pictures.map((p) => p.file),
    ],
    { cwd: process.cwd(), env: trainerEnv(join(work, 'settings')) },
  );
  return JSON.parse(out) as Reference[][];
}

/** IoU of two xyxy boxes; 1 for the same coordinates (a barely trained head can put x2 left of x1). */
function iou(a: number[], b: number[]): number {
  if (a.every((v, i) => Math.abs(v - b[i]) < 1e-4)) return 1;
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = w * h;
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return union > 0 ? inter / union : 0;
}

/** Even-odd fill of a polygon sampled at pixel centres: the mask a polygon stands for. */
function rasterize(polygon: number[], width: number, height: number): Uint8Array {
  const mask = new Uint8Array(width * height);
  const n = polygon.length / 2;
  for (let y = 0; y < height; y++) {
    const cy = y + 0.5;
    const xs: number[] = [];
    for (let i = 0, j = n - 1; i < n; j = i++) {
      const [xi, yi, xj, yj] = [polygon[2 * i], polygon[2 * i + 1], polygon[2 * j], polygon[2 * j + 1]];
      if (yi > cy !== yj > cy) xs.push(xi + ((cy - yi) / (yj - yi)) * (xj - xi));
    }
    xs.sort((a, b) => a - b);
    for (let k = 0; k + 1 < xs.length; k += 2) {
      for (let x = Math.max(0, Math.ceil(xs[k] - 0.5)); x < Math.min(width, Math.ceil(xs[k + 1] - 0.5)); x++)
        mask[y * width + x] = 1;
    }
  }
  return mask;
}

function maskIou(a: number[], b: number[], width: number, height: number): number {
  const ma = rasterize(a, width, height);
  const mb = rasterize(b, width, height);
  let inter = 0;
  let union = 0;
  for (let i = 0; i < ma.length; i++) {
    inter += ma[i] & mb[i];
    union += ma[i] | mb[i];
  }
  return union === 0 ? 1 : inter / union;
}

/** Worst figures over a model's comparisons, reported with the test. */
class Worst {
  boxIou = 1;
  conf = 0;
  maskIou = 1;
  keypoint = 0;
  corner = 0;
  summary = 0;
  depth = 0;
  count = 0;
  toString(): string {
    return `${this.count} rows; min box IoU ${this.boxIou.toFixed(6)}, max conf diff ${this.conf.toExponential(2)}, min mask IoU ${this.maskIou.toFixed(4)}, max keypoint diff ${this.keypoint.toFixed(4)} px, max obb corner diff ${this.corner.toFixed(4)} px, max summary diff ${this.summary.toExponential(2)}, max depth diff ${this.depth.toExponential(2)} (relative)`;
  }
}

function compare(
  tt: Test,
  task: FixtureTask,
  ours: Prediction,
  ref: Reference,
  names: string[],
  worst: Worst,
  where: string,
): void {
  tt.same(ours.shape, ref.shape, `${where}: shape`);
  if (task === 'depth') {
    const theirs = new Float32Array(new Uint8Array(Buffer.from(ref.depth!, 'base64')).buffer);
    const mine = ours.depth!;
    tt.equal(mine.length, theirs.length, `${where}: depth map size`);
    let diff = 0;
    for (let i = 0; i < theirs.length; i++)
      diff = Math.max(diff, Math.abs(mine[i] - theirs[i]) / Math.max(Math.abs(theirs[i]), 1e-3));
    worst.count++;
    worst.depth = Math.max(worst.depth, diff);
    tt.ok(diff < 1e-5, `${where}: depth within 1e-5 relative (${diff})`);
    return;
  }
  if (task === 'semantic') {
    const theirs = Buffer.from(ref.semantic!, 'base64');
    const mine = ours.semanticMask!;
    tt.equal(mine.length, theirs.length, `${where}: class map size`);
    let differ = 0;
    for (let i = 0; i < theirs.length; i++) if (mine[i] !== theirs[i]) differ++;
    worst.count++;
    worst.maskIou = Math.min(worst.maskIou, 1 - differ / theirs.length);
    tt.equal(differ, 0, `${where}: every pixel's class`);
    return;
  }
  if (task === 'classify') {
    const top5 = summarize(ours, names, { normalize: false, decimals: 10 });
    const refTop5 = ref.summaries['False-5'];
    tt.same(
      top5.map((r) => r.class),
      refTop5.map((r) => r.class),
      `${where}: top-5 classes`,
    );
    worst.count++;
    for (let k = 0; k < ours.probs!.length; k++)
      worst.conf = Math.max(worst.conf, Math.abs(ours.probs![k] - ref.probs![k]));
    tt.ok(worst.conf < 1e-3, `${where}: probabilities within 1e-3`);
    return;
  }
  tt.equal(ours.boxes.length, ref.boxes!.length, `${where}: number of detections`);
  const used = new Set<number>();
  for (let r = 0; r < ref.boxes!.length; r++) {
    // Same order expected; match by best IoU among same-class rows to tolerate swapped near-ties.
    let best = -1;
    let bestIou = -1;
    for (let k = 0; k < ours.boxes.length; k++) {
      if (used.has(k) || ours.classes[k] !== ref.cls![r]) continue;
      const score =
        task === 'obb'
          ? -Math.max(...ours.boxes[k].map((v, i) => Math.abs(v - ref.boxes![r][i])))
          : iou(ours.boxes[k], ref.boxes![r]);
      if (score > bestIou) {
        bestIou = score;
        best = k;
      }
    }
    if (best < 0) {
      tt.fail(`${where}: row ${r} (class ${ref.cls![r]}, conf ${ref.conf![r]}) has no counterpart`);
      continue;
    }
    used.add(best);
    worst.count++;
    worst.conf = Math.max(worst.conf, Math.abs(ours.confidences[best] - ref.conf![r]));
    if (task === 'obb') worst.corner = Math.max(worst.corner, -bestIou);
    else worst.boxIou = Math.min(worst.boxIou, bestIou);
    if (task === 'segment')
      worst.maskIou = Math.min(
        worst.maskIou,
        maskIou(ours.polygons![best], ref.polygons![r], ref.shape[1], ref.shape[0]),
      );
    if (task === 'pose') {
      ref.keypoints![r].forEach((point, p) => {
        const mine = ours.keypoints![best][p];
        worst.keypoint = Math.max(worst.keypoint, Math.abs(mine[0] - point[0]), Math.abs(mine[1] - point[1]));
        worst.conf = Math.max(worst.conf, Math.abs(mine[2] - point[2]));
      });
    }
  }
  tt.ok(worst.boxIou > 0.99, `${where}: boxes IoU > 0.99 (${worst.boxIou})`);
  tt.ok(worst.conf < 1e-3, `${where}: confidences within 1e-3 (${worst.conf})`);
  tt.ok(worst.maskIou > 0.95, `${where}: masks IoU > 0.95 (${worst.maskIou})`);
  tt.ok(worst.keypoint < 1, `${where}: keypoints within 1 px (${worst.keypoint})`);
  tt.ok(worst.corner < 1, `${where}: obb corners within 1 px (${worst.corner})`);
}

/** Every number of our summary within one unit of the last decimal of ultralytics', same names, classes, keys and lengths. */
function compareSummary(
  tt: Test,
  ours: unknown,
  theirs: unknown,
  decimals: number,
  slack: number,
  worst: Worst,
  where: string,
): void {
  if (typeof theirs === 'number') {
    const diff = Math.abs((ours as number) - theirs);
    worst.summary = Math.max(worst.summary, diff);
    // One unit of the last decimal (a difference in the last float32 bit can flip it), plus `slack`.
    if (!(diff <= 10 ** -decimals * 1.0001 + Math.abs(theirs) * 2 ** -22 + slack))
      tt.fail(`${where}: ${String(ours)} vs ${theirs}`);
    return;
  }
  if (Array.isArray(theirs)) {
    if (!Array.isArray(ours) || ours.length !== theirs.length) {
      tt.fail(`${where}: lengths ${Array.isArray(ours) ? ours.length : 'none'} vs ${theirs.length}`);
      return;
    }
    theirs.forEach((item, i) => compareSummary(tt, ours[i], item, decimals, slack, worst, `${where}[${i}]`));
    return;
  }
  if (theirs && typeof theirs === 'object') {
    tt.same(Object.keys(ours as object).sort(), Object.keys(theirs).sort(), `${where}: keys`);
    for (const [key, value] of Object.entries(theirs))
      compareSummary(tt, (ours as Record<string, unknown>)[key], value, decimals, slack, worst, `${where}.${key}`);
    return;
  }
  if (ours !== theirs) tt.fail(`${where}: ${String(ours)} vs ${String(theirs)}`);
}

const CASES: { task: FixtureTask; arch?: string; exportArgs?: string[] }[] = [
  { task: 'detect' },
  { task: 'detect', arch: 'yolo26n' }, // YOLO26: exported with nms=False, the end2end head
  { task: 'detect', exportArgs: ['dynamic=False'] }, // a static input: imgsz is the export's, whatever is asked
  { task: 'detect', exportArgs: ['dynamic=True', 'nms=True', 'conf=0.001'] }, // NMS inside the graph (its conf baked in): [1, 300, 6] rows
  { task: 'segment' },
  { task: 'segment', arch: 'yolo26n-seg' },
  { task: 'pose' },
  { task: 'pose', arch: 'yolo26n-pose' },
  { task: 'obb' },
  { task: 'obb', arch: 'yolo26n-obb' },
  { task: 'classify' },
  { task: 'semantic' }, // yolo26n-sem: ArgMax in the graph, a class map out
  { task: 'depth' }, // yolo26n-depth: the stretched input, a depth map out
];

for (const { task, arch, exportArgs } of CASES) {
  const variant = [arch && `${arch}, end2end head`, exportArgs?.join(' ')].filter(Boolean).join(', ');
  t.test(`${task}${variant ? ` (${variant})` : ''}: the same predictions as ultralytics`, async (tt) => {
    const trained = await trainedModel(task, arch);
    const fixture = exportArgs ? { ...trained, onnx: await exportedVariant(trained, exportArgs) } : trained;
    const endToEnd = arch?.startsWith('yolo26') === true || exportArgs?.includes('nms=True') === true;
    const pictures =
      task === 'classify'
        ? await writeTestPictures(mkdtempSync(join(work, 'single-')), { single: true })
        : await scenes;
    const model = await OnnxModel.load(fixture.onnx, { intraOpThreads: 1 });
    tt.teardown(() => model.release());
    tt.equal(model.info.task, task);
    tt.same(model.info.names, fixture.names);
    tt.equal(model.info.end2end, endToEnd);
    tt.equal(model.info.dynamic, !exportArgs?.includes('dynamic=False'));
    const references = await reference(fixture.onnx, task, pictures, RUNS);
    const worst = new Worst();
    let detections = 0;
    let skipped = 0;
    for (const [r, run] of RUNS.entries()) {
      for (const [p, picture] of pictures.entries()) {
        const image = await decodeImage(readFileSync(picture.file), { maxPixels: 50_000_000 });
        const ours = await model.predict(image, {
          conf: run.conf,
          iou: run.iou,
          imgsz: run.imgsz,
          maxDet: run.max_det,
        });
        const ref = references[r][p];
        const where = `${picture.label} @ imgsz ${run.imgsz} conf ${run.conf} iou ${run.iou} max_det ${run.max_det}`;
        if (ref.error) {
          // Only the end2end head's fixed TopK makes ultralytics fail; we answer (at the full square) instead.
          tt.ok(endToEnd && /TopK/.test(ref.error), `${where}: ultralytics fails only on a TopK bound (${ref.error})`);
          tt.same(ours.shape, [image.height, image.width], `${where}: we answer where ultralytics fails`);
          skipped++;
          continue;
        }
        compare(tt, task, ours, ref, model.info.names, worst, where);
        detections += ours.boxes.length;
        for (const normalize of [false, true]) {
          for (const decimals of [5, 2]) {
            // obb corners: torch's vectorised float32 cos/sin are not correctly rounded; corners differ by up to ~1e-4 px.
            const slack = task === 'obb' ? (normalize ? 1e-6 : 2e-4) : 0;
            compareSummary(
              tt,
              summarize(ours, model.info.names, { normalize, decimals }),
              ref.summaries[`${normalize ? 'True' : 'False'}-${decimals}`],
              decimals,
              slack,
              worst,
              `${where} summary(${normalize}, ${decimals})`,
            );
          }
        }
      }
    }
    if (!['classify', 'semantic', 'depth'].includes(task))
      tt.ok(detections >= pictures.length * RUNS.length, `predictions are not trivial (${detections} detections)`);
    tt.ok(skipped < (pictures.length * RUNS.length) / 2, `most comparisons ran (${skipped} where ultralytics failed)`);
    tt.comment(`${task}${variant ? ` (${variant})` : ''}: ${worst.toString()}`);
  });
}
