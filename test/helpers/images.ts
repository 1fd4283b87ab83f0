import sharp from 'sharp';

export interface ShapeImage {
  bytes: Buffer;
  filename: string;
  /** The drawn rectangle as a YOLO box [xc, yc, w, h], normalized and exact. */
  bbox: [number, number, number, number];
}

let counter = 0;

/**
 * A synthetic picture: one filled rectangle on a plain background, so its label is known exactly.
 * Every call draws a different image (the background shade changes), so hashes differ.
 */
export async function shapeImage(
  options: {
    width?: number;
    height?: number;
    box?: [number, number, number, number];
    format?: 'png' | 'jpeg';
    name?: string;
  } = {},
): Promise<ShapeImage> {
  const width = options.width ?? 64;
  const height = options.height ?? 48;
  const [left, top, w, h] = options.box ?? [8, 8, 16, 12];
  counter += 1;
  const shade = counter % 250;
  const rectangle = await sharp({ create: { width: w, height: h, channels: 3, background: { r: 255, g: 0, b: 0 } } })
    .png()
    .toBuffer();
  const image = sharp({
    create: { width, height, channels: 3, background: { r: shade, g: Math.floor(counter / 250) % 250, b: 200 } },
  }).composite([{ input: rectangle, left, top }]);
  const format = options.format ?? 'png';
  const bytes = format === 'png' ? await image.png().toBuffer() : await image.jpeg().toBuffer();
  return {
    bytes,
    filename: options.name ?? `shape-${counter}.${format === 'png' ? 'png' : 'jpg'}`,
    bbox: [(left + w / 2) / width, (top + h / 2) / height, w / width, h / height],
  };
}
