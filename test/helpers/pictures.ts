// Synthetic pictures for the image embedder's tests: distinct ones, and edited copies of one (near duplicates).
import sharp from 'sharp';
import type { SeededRandom } from './random.ts';

const WORDS = [
  'harbour',
  'quartz',
  'lantern',
  'meadow',
  'voltage',
  'orchid',
  'glacier',
  'pixel',
  'saffron',
  'tundra',
  'ember',
  'nimbus',
];

const color = (random: SeededRandom) => `rgb(${random.int(256)},${random.int(256)},${random.int(256)})`;

/** A distinct 320x240 picture: a gradient, a few shapes, a word, noise. */
export async function picture(random: SeededRandom): Promise<Buffer> {
  const [width, height] = [320, 240];
  const shapes: string[] = [];
  for (let i = 0, n = 3 + random.int(4); i < n; i++) {
    const [x, y, size] = [random.int(width), random.int(height), 20 + random.int(90)];
    const style = `fill="${color(random)}" stroke="${color(random)}" stroke-width="${random.int(6)}"`;
    const kind = random.int(3);
    if (kind === 0) shapes.push(`<circle cx="${x}" cy="${y}" r="${size / 2}" ${style}/>`);
    else if (kind === 1)
      shapes.push(
        `<rect x="${x - size / 2}" y="${y - size / 3}" width="${size}" height="${(size * 2) / 3}" transform="rotate(${random.int(90)} ${x} ${y})" ${style}/>`,
      );
    else
      shapes.push(
        `<polygon points="${x},${y - size / 2} ${x + size / 2},${y + size / 2} ${x - size / 2},${y + size / 2}" ${style}/>`,
      );
  }
  const word = `<text x="${10 + random.int(150)}" y="${40 + random.int(180)}" font-size="${24 + random.int(30)}" font-family="sans-serif" fill="${color(random)}">${random.pick(WORDS)}</text>`;
  const [x2, y2] = [random.next(), random.next()];
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
    <defs><linearGradient id="g" x1="0" y1="0" x2="${x2}" y2="${y2}"><stop offset="0" stop-color="${color(random)}"/><stop offset="1" stop-color="${color(random)}"/></linearGradient></defs>
    <rect width="100%" height="100%" fill="url(#g)"/>${shapes.join('')}${word}</svg>`;
  const { data } = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const amplitude = random.int(40);
  for (let i = 0; i < data.length; i++)
    data[i] = Math.max(0, Math.min(255, data[i] + Math.round((random.next() - 0.5) * amplitude)));
  return sharp(data, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
}

/** `count` distinct pictures, made one after another: a picture draws from `random` after an await, so pictures made at once would differ from run to run. */
export async function pictures(random: SeededRandom, count: number): Promise<Buffer[]> {
  const made: Buffer[] = [];
  for (let i = 0; i < count; i++) made.push(await picture(random));
  return made;
}

/** Edited copies: a crop; flipped and re-encoded; colours jittered and re-encoded harder. */
export async function copiesOf(base: Buffer): Promise<Buffer[]> {
  return Promise.all([
    sharp(base).extract({ left: 32, top: 20, width: 256, height: 192 }).png().toBuffer(),
    sharp(base).flop().jpeg({ quality: 75 }).toBuffer(),
    sharp(base)
      .modulate({ brightness: 1.2, saturation: 1.3, hue: 15 })
      .linear(1.1, -8)
      .jpeg({ quality: 35 })
      .toBuffer(),
  ]);
}
