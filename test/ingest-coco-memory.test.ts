// A COCO file of tens of millions of tiny records through the real upload and ingest: the control plane's
// memory must not grow with the file (the README's bound holds whatever its size), and the ingest ends with
// a result the user can read. The archive is generated on the fly into a file, never held here.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import t from 'tap';
import { waitForJob } from './helpers/archives.ts';
import { shapeImage } from './helpers/images.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld, type World } from './helpers/world.ts';

/** Records in the test's file (about 3.9 bytes each: 60 million make 223 MB); COCO_RECORDS sets another count. */
const RECORDS = Number(process.env.COCO_RECORDS ?? 60_000_000);

/**
 * Writes, in a child process, a ZIP of a.png and a COCO file whose annotations are `records` numbers of one to
 * three digits: each a record the reader must look at and skip (varied digits keep it from compressing past the
 * archive ratio limit). Generating hundreds of MB here would fill this process's heap, the control plane's, with
 * garbage that hides what the ingest takes.
 */
async function writeTinyRecordsZip(zip: string, image: string, records: number): Promise<void> {
  const script = `
    import { createWriteStream } from 'node:fs';
    import { Readable } from 'node:stream';
    import { pipeline } from 'node:stream/promises';
    import yazl from 'yazl';
    const [zipPath, imagePath, records] = [process.argv[1], process.argv[2], Number(process.argv[3])];
    function* chunks() {
      yield '{"images":[{"id":1,"file_name":"a.png","width":64,"height":48}],"categories":[{"id":1,"name":"thing"}],"annotations":[';
      for (let written = 0; written < records; written += 100000) {
        const numbers = Array.from({ length: Math.min(100000, records - written) }, (_, i) => ((written + i) * 7919) % 1000);
        yield (written === 0 ? '' : ',') + numbers.join(',');
      }
      yield ']}';
    }
    const zip = new yazl.ZipFile();
    zip.addFile(imagePath, 'a.png');
    zip.addReadStream(Readable.from(chunks()), 'annotations/instances_train.json');
    zip.end();
    await pipeline(zip.outputStream, createWriteStream(zipPath));`;
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, zip, image, String(records)], {
    cwd: process.cwd(),
  });
}

/** Uploads a file from disk through the signed-URL API, streaming; returns the session id. */
async function uploadFile(world: World, datasetId: string, file: string): Promise<string> {
  const totalBytes = statSync(file).size;
  const ticket = await call<{ sessionId: string; uploadUrl: string; headers: Record<string, string> }>(
    world.server,
    'POST',
    '/api/upload/signed-url',
    {
      key: world.alice,
      body: {
        assetType: 'datasets',
        assetId: datasetId,
        filename: 'tiny.zip',
        contentType: 'application/octet-stream',
        totalBytes,
      },
    },
  );
  if (ticket.status !== 200) throw new Error(`signed-url: ${ticket.status} ${JSON.stringify(ticket.body)}`);
  const body = Readable.toWeb(createReadStream(file)) as ReadableStream;
  const put = await fetch(ticket.body.uploadUrl, {
    method: 'PUT',
    headers: { ...ticket.body.headers, 'content-length': String(totalBytes) },
    body,
    duplex: 'half',
  } as RequestInit);
  if (put.status !== 200) throw new Error(`upload PUT: ${put.status} ${await put.text()}`);
  const md5 = createHash('md5');
  for await (const chunk of createReadStream(file)) md5.update(chunk as Buffer);
  const complete = await call(world.server, 'POST', '/api/upload/complete', {
    key: world.alice,
    body: { sessionId: ticket.body.sessionId, md5: md5.digest('hex') },
  });
  if (complete.status !== 200) throw new Error(`complete: ${complete.status}`);
  return ticket.body.sessionId;
}

const MB = 2 ** 20;

/** Samples the process's RSS until stopped; returns the highest seen. */
function rssSampler(): () => number {
  let peak = process.memoryUsage().rss;
  const sample = () => (peak = Math.max(peak, process.memoryUsage().rss));
  const timer = setInterval(sample, 10);
  return () => {
    clearInterval(timer);
    return sample();
  };
}

t.test(
  `a COCO file of ${RECORDS.toLocaleString('en')} tiny records: the control plane's memory does not grow with it`,
  async (t) => {
    const work = mkdtempSync(join(tmpdir(), 'vp-coco-memory-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));
    const world = await startWorld(t);
    const datasetId = await createDataset(world, world.alice, { dataset: 'tiny', name: 'Tiny' });
    const [zip, image] = [join(work, 'tiny.zip'), join(work, 'a.png')];
    writeFileSync(image, (await shapeImage({ name: 'a.png' })).bytes);
    await writeTinyRecordsZip(zip, image, RECORDS);
    const sessionId = await uploadFile(world, datasetId, zip);
    rmSync(zip);
    const before = process.memoryUsage().rss;
    const peakOf = rssSampler();
    const started = Date.now();
    const job = await call<{ jobId: string }>(world.server, 'POST', '/api/datasets/alice/tiny/ingest', {
      key: world.alice,
      body: { sessionId },
    });
    t.equal(job.status, 201);
    const ended = await waitForJob(t, world, world.alice, job.body.jobId, { seconds: 900 });
    const seconds = (Date.now() - started) / 1000;
    const peak = peakOf();
    const fileMB = Math.round((RECORDS * 3.9) / MB);
    t.comment(
      `${RECORDS} records (${fileMB} MB) in ${seconds.toFixed(1)} s; RSS ${Math.round(before / MB)} MB before the ingest, ${Math.round(peak / MB)} MB at its peak`,
    );
    t.equal(ended.status, 'completed', String(ended.error));
    t.match(ended.result, { format: 'coco', imagesAdded: 1, labelsAdded: 0 });
    t.equal(
      (ended.result?.skippedReasons as Record<string, number> | undefined)?.[
        'its image_id is not an image of this file found in the archive'
      ],
      RECORDS,
      'every record is counted',
    );
    // Holding the file's bytes took all of them and more; streamed, what grows is garbage the next full GC takes
    // (V8 lets the heap grow to a multiple of what is live, ~80 MB here, whatever the file's size).
    t.ok(
      peak - before < 200 * MB,
      `the peak grew by ${Math.round((peak - before) / MB)} MB ingesting a ${fileMB} MB file`,
    );
    t.ok(peak < 600 * MB, `the peak stays under the README's 600 MB (${Math.round(peak / MB)} MB)`);
  },
);
