// Ingest downloads (sourceUrl, NDJSON image URLs) as an editor sees them: URLs into the appliance's own
// network are refused with a reason before any connection, nothing a local service answers is stored or
// served back, and an operator opts networks in with OUTBOUND_ALLOWED_NETWORKS.
import sharp from 'sharp';
import t from 'tap';
import { ingestArchive, waitForJob, zipOf, type JobView } from './helpers/archives.ts';
import { startHttpSource } from './helpers/http-source.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

const SECRET = 'internal-service-secret-4711';

const ndjson = (items: Array<{ file: string; url: string }>) =>
  Buffer.from(items.map((item) => `${JSON.stringify({ type: 'image', split: 'train', ...item })}\n`).join(''));

/** Every image of the dataset with the bytes its signed URL serves. */
async function servedImages(world: World, slug: string) {
  const listing = await call<{ images: Array<{ name: string; imageUrl: string; error: string | null }> }>(
    world.server,
    'GET',
    `/api/datasets/alice/${slug}/images?limit=1000&includeImageUrls=true`,
    { key: world.alice },
  );
  return Promise.all(
    listing.body.images.map(async (image) => ({
      name: image.name,
      error: image.error,
      bytes: Buffer.from(await (await fetch(image.imageUrl)).arrayBuffer()),
    })),
  );
}

/** The job's skipped entries as path → reason (items are downloaded concurrently, in no set order). */
function skippedByPath(job: JobView): Record<string, string> {
  return Object.fromEntries(
    (job.result!.skippedEntries as Array<{ path: string; reason: string }>).map(({ path, reason }) => [path, reason]),
  );
}

async function ingestFromUrl(t: Parameters<typeof waitForJob>[0], world: World, slug: string, sourceUrl: string) {
  const started = await call<{ jobId: string }>(world.server, 'POST', `/api/datasets/alice/${slug}/ingest`, {
    key: world.alice,
    body: { sourceUrl },
  });
  t.equal(started.status, 201);
  return waitForJob(t, world, world.alice, started.body.jobId);
}

t.test(
  'NDJSON image URLs into the local network are skipped with a reason; the local service is never contacted',
  async (t) => {
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.2/32' }); // 127.0.0.2 stands for a public host
    const internal = await startHttpSource(t, '127.0.0.1', (_req, res) => res.end(SECRET));
    const good = await shapeImage();
    const allowed = await startHttpSource(t, '127.0.0.2', (req, res) => {
      if (req.url === '/redirect') res.writeHead(302, { location: `${internal.origin}/secret` }).end();
      else res.writeHead(200, { 'content-type': 'image/png' }).end(good.bytes);
    });
    const datasetId = await createDataset(world, world.alice, { dataset: 'remote', name: 'Remote' });
    const set = ndjson([
      { file: 'loopback.png', url: `${internal.origin}/secret` },
      { file: 'hex.png', url: `http://0x7f000001:${internal.port}/secret` },
      { file: 'metadata.png', url: 'http://169.254.169.254/latest/meta-data/' },
      { file: 'inline.png', url: `data:text/plain,${SECRET}` },
      { file: 'redirected.png', url: `${allowed.origin}/redirect` },
      { file: 'good.png', url: `${allowed.origin}/good.png` },
    ]);
    const job = await ingestArchive(t, world, world.alice, 'alice', 'remote', datasetId, 'set.ndjson', set);
    t.match(job, {
      status: 'completed',
      result: {
        imagesAdded: 1,
        entriesSkipped: 5,
        skippedReasons: { 'download refused: 127.0.0.1 is not a public address (loopback)': 2 },
      },
    });
    t.same(skippedByPath(job), {
      'loopback.png': 'download refused: 127.0.0.1 is not a public address (loopback)',
      'hex.png': 'download refused: 127.0.0.1 is not a public address (loopback)',
      'metadata.png': 'download refused: 169.254.169.254 is not a public address (link-local)',
      'inline.png': 'download refused: data: URLs are not downloaded (only http and https)',
      'redirected.png': `download refused: redirected to ${internal.origin}/secret, which is refused: 127.0.0.1 is not a public address (loopback)`,
    });
    t.same(internal.requests, [], 'the local service never saw a request');
    const served = await servedImages(world, 'remote');
    t.same(
      served.map((image) => image.name),
      ['good.png'],
      'only the image from the allowed host was stored',
    );
    t.ok(served[0].bytes.equals(good.bytes), 'and it is served back as it was');
  },
);

t.test('with the network allowed, a URL body that is not an image is skipped, never stored or served', async (t) => {
  const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
  const good = await shapeImage();
  const source = await startHttpSource(t, '127.0.0.1', (req, res) => {
    if (req.url === '/good.png') res.end(good.bytes);
    else if (req.url === '/missing.png') res.writeHead(404).end(SECRET);
    else res.writeHead(200, { 'content-type': 'image/png' }).end(`<html>${SECRET}</html>`);
  });
  const datasetId = await createDataset(world, world.alice, { dataset: 'remote', name: 'Remote' });
  const set = ndjson([
    { file: 'page.png', url: `${source.origin}/admin` },
    { file: 'missing.png', url: `${source.origin}/missing.png` },
    { file: 'good.png', url: `${source.origin}/good.png` },
  ]);
  const job = await ingestArchive(t, world, world.alice, 'alice', 'remote', datasetId, 'set.ndjson', set);
  t.match(job, {
    status: 'completed',
    result: { imagesAdded: 1, skippedReasons: { 'not an image': 1, 'download failed: HTTP 404': 1 } },
  });
  t.same(skippedByPath(job), { 'page.png': 'not an image', 'missing.png': 'download failed: HTTP 404' });
  t.notMatch(JSON.stringify(job), SECRET, 'no response body is quoted');
  const served = await servedImages(world, 'remote');
  t.same(
    served.map((image) => image.name),
    ['good.png'],
  );
  t.notOk(
    served.some((image) => image.bytes.includes(SECRET)),
    'nothing serves the internal page back',
  );
});

t.test(
  'an NDJSON URL image over the in-memory size is written to disk as it downloads and stored byte for byte',
  async (t) => {
    const world = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
    const noise = await sharp({
      create: {
        width: 2600,
        height: 2600,
        channels: 3,
        background: '#000',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .png({ compressionLevel: 1 })
      .toBuffer();
    t.ok(noise.length > 16 * 2 ** 20, `the photo is ${(noise.length / 2 ** 20).toFixed(1)} MiB`);
    // Chunked, with no Content-Length: the size is known only once it has all come.
    const source = await startHttpSource(t, '127.0.0.1', (_req, res) => {
      for (let at = 0; at < noise.length; at += 2 ** 20) res.write(noise.subarray(at, at + 2 ** 20));
      res.end();
    });
    const datasetId = await createDataset(world, world.alice, { dataset: 'remote', name: 'Remote' });
    const job = await ingestArchive(
      t,
      world,
      world.alice,
      'alice',
      'remote',
      datasetId,
      'set.ndjson',
      ndjson([{ file: 'large.png', url: `${source.origin}/large.png` }]),
    );
    t.match(job, { status: 'completed', result: { imagesAdded: 1, imagesWithErrors: 0 } });
    const served = await servedImages(world, 'remote');
    t.match(served, [{ name: 'large.png', error: null }]);
    t.ok(served[0].bytes.equals(noise), 'the stored file is the download, byte for byte');
  },
);

t.test('sourceUrl on loopback: refused by default, fetched once the operator allows the network', async (t) => {
  const zip = await zipOf({ 'a.png': (await shapeImage()).bytes, 'b.png': (await shapeImage()).bytes });
  const source = await startHttpSource(t, '127.0.0.1', (_req, res) => res.end(zip));

  const closed = await startWorld(t);
  await createDataset(closed, closed.alice, { dataset: 'remote', name: 'Remote' });
  const refused = await ingestFromUrl(t, closed, 'remote', `${source.origin}/shapes.zip`);
  t.match(refused, {
    status: 'failed',
    error: `Could not download ${source.origin}/shapes.zip: 127.0.0.1 is not a public address (loopback)`,
  });
  t.same(source.requests, [], 'refused before connecting');

  const open = await startWorld(t, { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.1/32' });
  await createDataset(open, open.alice, { dataset: 'remote', name: 'Remote' });
  t.match(await ingestFromUrl(t, open, 'remote', `${source.origin}/shapes.zip`), {
    status: 'completed',
    result: { imagesAdded: 2 },
  });
  t.same(source.requests, ['/shapes.zip']);
});
