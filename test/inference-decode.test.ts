// decodeImage refuses what is not a whole, bounded image with InvalidImage (a clear message, never another error or a
// crash), and reads the rest as cv2.imdecode(IMREAD_COLOR) does: EXIF orientation applied, grey to 3 channels, alpha dropped.
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { decodeImage, InvalidImage } from '../inference/src/index.ts';

const LIMITS = { maxPixels: 40_000_000 };

/** A PNG of a 50,000 × 50,000 grey image: a valid header and the start of its data, built by hand. */
function hugePng(): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(50_000, 0);
  header.writeUInt32BE(50_000, 4);
  header[8] = 8; // bit depth
  header[9] = 0; // greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.alloc(50_001 * 4))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

async function refused(tt: Test, bytes: Uint8Array, pattern: RegExp, what: string): Promise<void> {
  const error = await decodeImage(bytes, LIMITS).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  tt.ok(error instanceof InvalidImage, `${what}: InvalidImage`);
  tt.match((error as Error | undefined)?.message ?? '', pattern, `${what}: says why`);
}

t.test('bytes that are not a whole, bounded image are refused as InvalidImage', async (tt) => {
  const jpeg = await sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 10, g: 200, b: 30 } } })
    .jpeg()
    .toBuffer();
  await refused(tt, new Uint8Array(0), /empty/, 'zero bytes');
  await refused(tt, Buffer.from('this is not an image, just some text'), /not an image/, 'text');
  await refused(tt, Buffer.from('%PDF-1.4\n1 0 obj\n<<>>\nendobj\n'), /not an image/, 'a PDF');
  await refused(
    tt,
    jpeg.subarray(0, Math.floor(jpeg.length * 0.6)),
    /could not be decoded|truncated|premature|corrupt/i,
    'a truncated JPEG',
  );
  await refused(tt, jpeg.subarray(0, 20), /not an image|could not be decoded/, 'a JPEG cut inside its header');
  await refused(tt, hugePng(), /50000 × 50000 pixels, more than/, 'a 50,000 × 50,000 PNG header');
  const random = Buffer.alloc(4096);
  for (let i = 0; i < random.length; i++) random[i] = (i * 7919) % 251;
  await refused(
    tt,
    Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), random]),
    /./,
    'a JPEG signature followed by garbage',
  );
});

t.test('images are read as cv2.imdecode(IMREAD_COLOR) reads them', async (tt) => {
  // A 3 × 2 picture with distinct pixels, stored turned by EXIF orientation 6 (90° clockwise to display).
  const pixels = Buffer.from([255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 0, 0, 255, 255, 255, 0, 255]);
  const rotated = await sharp(pixels, { raw: { width: 3, height: 2, channels: 3 } })
    .png()
    .withMetadata({ orientation: 6 })
    .toBuffer();
  const turned = await decodeImage(rotated, LIMITS);
  tt.same([turned.width, turned.height], [2, 3], 'EXIF orientation applied');
  tt.same(
    Array.from(turned.data.subarray(0, 6)),
    [255, 255, 0, 255, 0, 0],
    'first row is the old first column, bottom to top',
  );

  const grey = await sharp(Buffer.from([0, 128, 255, 7]), { raw: { width: 2, height: 2, channels: 1 } })
    .png()
    .toBuffer();
  const greyImage = await decodeImage(grey, LIMITS);
  tt.same(
    Array.from(greyImage.data),
    [0, 0, 0, 128, 128, 128, 255, 255, 255, 7, 7, 7],
    'grey becomes three equal channels',
  );

  const rgba = await sharp(Buffer.from([200, 100, 50, 0, 10, 20, 30, 128]), {
    raw: { width: 2, height: 1, channels: 4 },
  })
    .png()
    .toBuffer();
  const rgbaImage = await decodeImage(rgba, LIMITS);
  tt.same(Array.from(rgbaImage.data), [200, 100, 50, 10, 20, 30], 'alpha dropped, colours kept (not blended)');

  await tt.rejects(decodeImage(grey, { maxPixels: 3 }), InvalidImage, 'more pixels than the limit');
});
