// The inference server's camera splits ffmpeg's MJPEG output into JPEG frames: real ffmpeg output, read in chunks of
// any size, gives back each frame whole (sharp decodes it); bytes outside frames, an FFD9 inside a segment and random
// noise do not confuse it; a frame past the bound is refused rather than buffered.
import { spawnSync } from 'node:child_process';
import sharp from 'sharp';
import t, { type Test } from 'tap';
import { JpegFrames } from '../inference-server/src/camera/jpeg-frames.ts';
import { seededRandom } from './helpers/random.ts';

const FRAMES = 5;
const made = spawnSync(
  'ffmpeg',
  [
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=160x120:rate=10',
    '-frames:v',
    String(FRAMES),
    '-c:v',
    'mjpeg',
    '-f',
    'image2pipe',
    'pipe:1',
  ],
  {
    maxBuffer: 64 * 2 ** 20,
  },
);
if (made.status !== 0) throw new Error(`ffmpeg failed: ${made.stderr.toString()}`);
const mjpeg = made.stdout;

function split(bytes: Buffer, chunkBytes: number, maxFrameBytes = 16 * 2 ** 20): Buffer[] {
  const frames = new JpegFrames(maxFrameBytes);
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) out.push(...frames.push(bytes.subarray(at, at + chunkBytes)));
  return out;
}

async function assertImages(t: Test, frames: Buffer[], count: number): Promise<void> {
  t.equal(frames.length, count, `${count} frames`);
  for (const frame of frames) t.match(await sharp(frame).metadata(), { format: 'jpeg', width: 160, height: 120 });
}

t.test('ffmpeg’s frames come back whole, however the pipe cuts them', async (t) => {
  for (const chunkBytes of [1, 7, 1000, 65_536, mjpeg.length]) {
    const frames = split(mjpeg, chunkBytes);
    t.same(Buffer.concat(frames), mjpeg, `chunks of ${chunkBytes} bytes: the frames are the stream`);
    await assertImages(t, frames, FRAMES);
  }
});

t.test('bytes between frames are skipped, an FFD9 inside a segment ends nothing', async (t) => {
  const [first, ...rest] = split(mjpeg, mjpeg.length);
  // A comment segment right after SOI holding FFD9 (as an embedded thumbnail's end would).
  const comment = Buffer.from([0xff, 0xfe, 0x00, 0x08, 0x61, 0xff, 0xd9, 0x62, 0xff, 0xd9]);
  const withComment = Buffer.concat([first!.subarray(0, 2), comment, first!.subarray(2)]);
  const stream = Buffer.concat([
    Buffer.from('noise before\xff'),
    withComment,
    Buffer.from([0xff, 0x00, 0x12]),
    ...rest,
  ]);
  const frames = split(stream, 100);
  await assertImages(t, frames, FRAMES);
  t.same(frames[0], withComment, 'the frame with the comment is whole');
});

t.test('noise gives no frame and does not stop the frames after it', async (t) => {
  const noise = seededRandom(19).bytes(2 ** 20);
  t.equal(split(noise, 4096).length, 0, 'no frame in the noise');
  await assertImages(t, split(Buffer.concat([noise, mjpeg]), 4096), FRAMES);
});

t.test('a frame past the bound is refused', async (t) => {
  const bound = Math.floor(split(mjpeg, mjpeg.length)[0]!.length / 2);
  t.throws(() => split(mjpeg, 512, bound), { name: 'FrameTooLarge', message: `a frame is larger than ${bound} bytes` });
});
