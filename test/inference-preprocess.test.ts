// The model input @vp/inference builds is the one ultralytics' predictor builds (LetterBox with cv2.resize INTER_LINEAR,
// the minimum-rectangle padding of a dynamic export, RGB, / 255; classify: PIL bilinear resize and centre crop), value
// for value, for up- and downscaling, odd aspect ratios and OpenCV's exact-halving shortcut.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import t from 'tap';
import { classifyTensor } from '../inference/src/classify-transform.ts';
import { decodeImage } from '../inference/src/index.ts';
import { letterbox } from '../inference/src/letterbox.ts';
import { runCommand, TRAINER_VENV, trainedModel, trainerEnv, type FixtureTask } from './helpers/yolo-models.ts';

// The first run trains the fixture models (a few minutes on 2 cores); later runs take them from .cache/test-models.
t.setTimeout(20 * 60_000);

const work = mkdtempSync(join(tmpdir(), 'inference-preprocess-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

/** Noise plus gradients: every pixel differs from its neighbours, so any difference in the resampling shows. */
async function picture(width: number, height: number, seed: number): Promise<string> {
  const data = Buffer.alloc(width * height * 3);
  let state = seed;
  for (let i = 0; i < data.length; i++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    const x = Math.floor(i / 3) % width;
    data[i] = ((x * 255) / width + (state >>> 24) / 2) % 256;
  }
  const file = join(work, `${width}x${height}.png`);
  writeFileSync(
    file,
    await sharp(data, { raw: { width, height, channels: 3 } })
      .png()
      .toBuffer(),
  );
  return file;
}

const SIZES: [number, number][] = [
  [640, 480], // downscale, wide
  [333, 517], // downscale, tall, odd
  [41, 29], // upscale
  [192, 192], // exact 2× (OpenCV's INTER_AREA shortcut)
  [96, 96], // no resize
  [1000, 37], // very wide: heavy padding
  [129, 95], // nearly 1:1 downscale
];

async function reference(
  onnx: string,
  task: FixtureTask,
  imgsz: number,
  files: string[],
): Promise<{ shape: number[]; data: string }[]> {
  const out = await runCommand(
    join(TRAINER_VENV, 'bin/python'),
    ['test/inference/ultralytics_reference.py', 'preprocess', onnx, task, '--imgsz', String(imgsz), ...files],
    {
      cwd: process.cwd(),
      env: trainerEnv(join(work, 'settings')),
    },
  );
  return JSON.parse(out) as { shape: number[]; data: string }[];
}

const files = await Promise.all(SIZES.map(([w, h], i) => picture(w, h, i + 1)));
// Stored values are what cv2 reads: an embedded ICC profile is not applied, 16 bits are cut to their high byte.
const colour = await sharp(readFileSync(files[0])).withIccProfile('p3').png().toBuffer();
writeFileSync(join(work, 'p3.png'), colour);
writeFileSync(join(work, '16bit.png'), await sharp(readFileSync(files[1])).toColourspace('rgb16').png().toBuffer());
files.push(join(work, 'p3.png'), join(work, '16bit.png'));
SIZES.push([640, 480], [333, 517]);

for (const { task, imgsz } of [
  { task: 'detect' as const, imgsz: 96 },
  { task: 'detect' as const, imgsz: 160 },
  { task: 'classify' as const, imgsz: 64 },
]) {
  t.test(`${task} input at imgsz ${imgsz} is ultralytics' preprocess output`, async (tt) => {
    const fixture = await trainedModel(task);
    const expected = await reference(fixture.onnx, task, imgsz, files);
    for (const [i, file] of files.entries()) {
      const image = await decodeImage(readFileSync(file), { maxPixels: 1e8 });
      const ours =
        task === 'classify' ? classifyTensor(image, [imgsz, imgsz]) : letterbox(image, [imgsz, imgsz], true, 32);
      const shape = expected[i].shape;
      tt.same([1, 3, ours.height, ours.width], shape, `${SIZES[i].join('×')}: input shape`);
      const theirs = new Float32Array(new Uint8Array(Buffer.from(expected[i].data, 'base64')).buffer);
      let differ = 0;
      let worst = 0;
      for (let k = 0; k < theirs.length; k++) {
        const diff = Math.abs(theirs[k] - ours.tensor[k]);
        if (diff > 0) differ++;
        worst = Math.max(worst, diff);
      }
      tt.equal(
        differ,
        0,
        `${SIZES[i].join('×')}: every value equal (largest difference ${(worst * 255).toFixed(2)}/255)`,
      );
    }
  });
}
