// Pictures for the inference tests, drawn with sharp like the fixtures' training data (red squares, blue discs, green
// triangles on a grey background), in the forms users send: PNG and JPEG at several sizes and aspect ratios, a JPEG
// whose EXIF orientation turns it, a grayscale PNG, an RGBA PNG.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp, { type Sharp } from 'sharp';
import { seededRandom } from './random.ts';

const random = (seed: number) => seededRandom(seed).next;

/** An SVG scene of `count` shapes (or one large shape for classify) on a plain background. */
function scene(width: number, height: number, seed: number, count: number, angled: boolean): string {
  const next = random(seed);
  const shapes: string[] = [];
  const side = Math.min(width, height);
  for (let n = 0; n < count; n++) {
    const r = side * (count === 1 ? 0.3 : 0.1 + next() * 0.08);
    const cx = r + next() * (width - 2 * r);
    const cy = r + next() * (height - 2 * r);
    const kind = Math.floor(next() * 3);
    const turn = angled ? next() * 90 : 0;
    const transform = `transform="rotate(${turn.toFixed(1)} ${cx.toFixed(1)} ${cy.toFixed(1)})"`;
    if (kind === 0)
      shapes.push(
        `<rect x="${cx - r * 0.9}" y="${cy - r * (angled ? 0.5 : 0.9)}" width="${r * 1.8}" height="${r * (angled ? 1 : 1.8)}" fill="#e02020" ${transform}/>`,
      );
    else if (kind === 1) shapes.push(`<circle cx="${cx}" cy="${cy}" r="${r}" fill="#2040e0"/>`);
    else
      shapes.push(
        `<polygon points="${cx},${cy - r} ${cx + r * 0.87},${cy + r / 2} ${cx - r * 0.87},${cy + r / 2}" fill="#28aa28" ${transform}/>`,
      );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#c4c4bc"/>${shapes.join('')}</svg>`;
}

export interface TestPicture {
  file: string;
  /** What it exercises, for messages. */
  label: string;
}

/** Writes the pictures into `dir` and returns their paths. `single`: one big shape each (classify). */
export async function writeTestPictures(dir: string, options: { single?: boolean } = {}): Promise<TestPicture[]> {
  const count = (seed: number) => (options.single ? 1 : 3 + (seed % 3));
  const angled = !options.single;
  const pictures: TestPicture[] = [];
  const add = async (
    label: string,
    name: string,
    make: (image: Sharp) => Sharp,
    width: number,
    height: number,
    seed: number,
  ) => {
    const file = join(dir, name);
    // SVG renders with an (opaque) alpha channel; every form but the RGBA one drops it first.
    writeFileSync(
      file,
      await make(sharp(Buffer.from(scene(width, height, seed, count(seed), angled))).removeAlpha()).toBuffer(),
    );
    pictures.push({ file, label });
  };
  await add('square PNG', 'square.png', (i) => i.png(), 96, 96, 1);
  await add('wide PNG, downscaled', 'wide.png', (i) => i.png(), 240, 130, 2);
  await add('tall JPEG, downscaled', 'tall.jpg', (i) => i.jpeg({ quality: 90 }), 150, 333, 3);
  await add('small PNG, upscaled', 'small.png', (i) => i.png(), 61, 45, 4);
  await add('exact 2x PNG', 'double.png', (i) => i.png(), 192, 192, 5);
  await add('large JPEG', 'large.jpg', (i) => i.jpeg({ quality: 85 }), 517, 389, 6);
  await add(
    'EXIF-rotated JPEG (orientation 6)',
    'rotated.jpg',
    (i) => i.jpeg({ quality: 92 }).withMetadata({ orientation: 6 }),
    200,
    120,
    7,
  );
  await add('grayscale PNG', 'gray.png', (i) => i.toColourspace('b-w').png(), 128, 100, 8);
  await add('RGBA PNG', 'rgba.png', (i) => i.ensureAlpha(0.6).png(), 110, 140, 9);
  return pictures;
}
