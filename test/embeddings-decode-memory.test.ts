// Dataset analysis embeds a batch's images within the process's decoding memory, with the real image embedder and a real
// control plane (in this process: its RSS is this process's): interlaced PNGs of 25 megapixels, each read whole to be
// shrunk (about 200 MiB by the ingest's estimate), are embedded one part of the batch at a time rather than all at once.
import sharp from 'sharp';
import t from 'tap';
import { crc32 } from 'node:zlib';
import { ingestArchive, waitForJob, zipOf } from './helpers/archives.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';

const MB = 2 ** 20;
const IMAGES = 6;
const world = await startWorld(t);

/** `png` with a tEXt chunk after its header: the same pixels, another file (another hash). */
function tagged(png: Buffer, text: string): Buffer {
  const data = Buffer.from(`Comment\0${text}`, 'latin1');
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write('tEXt', 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(data, crc32('tEXt')), 8 + data.length);
  const headerEnd = 8 + 25; // signature, then IHDR (length, type, 13 bytes, CRC)
  return Buffer.concat([png.subarray(0, headerEnd), chunk, png.subarray(headerEnd)]);
}

t.test('a batch of images read whole is embedded a part at a time, inside the decoding memory', async (t) => {
  const interlaced = await sharp({ create: { width: 5000, height: 5000, channels: 3, background: '#202020' } })
    .png({ progressive: true })
    .toBuffer();
  const files = Object.fromEntries(
    Array.from({ length: IMAGES }, (_, i) => [`images/train/big-${i}.png`, tagged(interlaced, String(i))]),
  );
  const datasetId = await createDataset(world, world.alice, { dataset: 'big', name: 'big' });
  const ingested = await ingestArchive(
    t,
    world,
    world.alice,
    'alice',
    'big',
    datasetId,
    'big.zip',
    await zipOf(files),
    {},
  );
  t.equal(ingested.status, 'completed', String(ingested.error));

  // The embedder's thread and session start on a first, small analysis: what is measured is the decoding.
  const smallId = await createDataset(world, world.alice, { dataset: 'small', name: 'small' });
  const small = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } })
    .png()
    .toBuffer();
  t.equal(
    (
      await ingestArchive(
        t,
        world,
        world.alice,
        'alice',
        'small',
        smallId,
        'small.zip',
        await zipOf({ 'images/train/small.png': small }),
        {},
      )
    ).status,
    'completed',
  );
  const warm = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/small/embeddings', {
    key: world.alice,
  });
  t.match(await waitForJob(t, world, world.alice, warm.body.jobId), { status: 'completed' });

  const rssBefore = process.memoryUsage.rss();
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  const started = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/big/embeddings', {
    key: world.alice,
  });
  t.equal(started.status, 202);
  const job = await waitForJob(t, world, world.alice, started.body.jobId, { seconds: 300 });
  clearInterval(sampler);
  t.match(job, { status: 'completed', result: { embedded: IMAGES } });
  const grownMB = (Math.max(peak, process.memoryUsage.rss()) - rssBefore) / MB;
  t.ok(
    grownMB < 170,
    `the process grew by ${Math.round(grownMB)} MB embedding ${IMAGES} images of 25 megapixels read whole`,
  );
});
