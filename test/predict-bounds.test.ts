// What one request may make the control plane hold, against a real control plane (in this process: its RSS and event
// loop are this process's) and real sharp: a JSON body larger than its fields need is 413 before it is parsed, and a
// predict image whose decoding would take more than a predict's share of the decoding memory is 413 before it is
// decoded; images within it decode a few at a time, inside the process's decoding memory.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { crc32, createDeflate } from 'node:zlib';
import t from 'tap';
import { ingestArchive, zipOf } from './helpers/archives.ts';
import { imagesOf } from './helpers/auto-annotate.ts';
import { expectError } from './helpers/expect.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { call } from './helpers/server.ts';
import { createDataset, startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

// The first run trains the fixture model (a few minutes on 2 cores); later runs take it from .cache/test-models.
t.setTimeout(20 * 60_000);
const MB = 2 ** 20;
const fixture = await trainedModel('detect');
const world = await startWorld(t, {
  RATE_LIMIT_PREDICT: '100000',
  RATE_LIMIT_MUTATION: '100000',
  PREDICT_WORKERS: '1',
  PREDICT_EXPORT_WAIT_SECONDS: '5',
});
const { server, alice } = world;
await createProject(world, alice, { project: 'vision', name: 'vision' });
const model = await createModel(world, alice, {
  project: 'vision',
  model: 'detector',
  task: 'detect',
  trainArgs: { imgsz: fixture.imgsz },
});
await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
await seedOnnxExport(server, model.id, fixture.onnx);
const PREDICT = '/api/models/alice/vision/detector/predict';
await createDataset(world, alice, { dataset: 'cats', name: 'Cats' });

/** A valid PNG of width × height black pixels (8-bit RGB), deflated row by row: a small file that decodes to width × height × 3 bytes. */
async function blackPng(width: number, height: number): Promise<Buffer> {
  const chunk = (type: string, data: Buffer) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(data, crc32(type)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const deflate = createDeflate();
  const parts: Buffer[] = [];
  deflate.on('data', (part: Buffer) => parts.push(part));
  const ended = once(deflate, 'end');
  const row = Buffer.alloc(1 + width * 3);
  for (let y = 0; y < height; y++) if (!deflate.write(row)) await once(deflate, 'drain');
  deflate.end();
  await ended;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', Buffer.concat(parts)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** POSTs `body` with node:http, one shared buffer for every request (so what this process holds is the server's); chunked when asked. */
function send(
  path: string,
  contentType: string,
  body: Buffer,
  options: { key?: string; chunked?: boolean } = {},
): Promise<{ status: number; error?: string }> {
  const headers = {
    authorization: `Bearer ${options.key ?? alice}`,
    'content-type': contentType,
    ...(!options.chunked && { 'content-length': String(body.length) }),
  };
  const req = request(new URL(path, server.url), { method: path.includes('/members/') ? 'PUT' : 'POST', headers });
  let answered = false;
  const answer = new Promise<{ status: number; error?: string }>((resolve, reject) => {
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (part: string) => (text += part));
      res.on('end', () => {
        resolve({ status: res.statusCode!, error: (JSON.parse(text) as { error?: string }).error });
        req.destroy();
      });
    });
    req.on('error', (error) => answered || reject(error));
  });
  if (!options.chunked) req.end(body);
  else {
    void (async () => {
      for (let at = 0; at < body.length && !answered && !req.destroyed; at += 256 * 1024)
        if (!req.write(body.subarray(at, at + 256 * 1024))) await once(req, 'drain');
      if (!answered && !req.destroyed) req.end();
    })().catch(() => undefined);
  }
  return answer;
}

async function predictFile(png: Buffer): Promise<{ status: number; error?: string }> {
  const form = new FormData();
  form.append('file', new Blob([png], { type: 'image/png' }), 'image.png');
  const response = await fetch(`${server.url}${PREDICT}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}` },
    body: form,
  });
  return { status: response.status, error: ((await response.json()) as { error?: string }).error };
}

/** Runs `work`, answering how much the process's RSS (sampled every 5 ms) rose over what it was, and the event loop's longest delay. */
async function measured<T>(
  work: () => Promise<T>,
): Promise<{ result: T; grownMB: number; maxDelayMs: number; ms: number }> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const rssBefore = process.memoryUsage.rss();
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  const started = performance.now();
  delay.enable();
  const result = await work();
  delay.disable();
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  return { result, grownMB: (peak - rssBefore) / MB, maxDelayMs: delay.max / 1e6, ms: performance.now() - started };
}

// First in this file (the peak RSS is measured from here): a 20 MiB JSON body of ten million numbers, which JSON.parse
// once turned into 1.5 GB; eight at once blocked the event loop for 36 s.
t.test(
  'a 20 MiB JSON predict body is 413 at once, unparsed: bounded memory, an event loop that never stalls',
  async (t) => {
    const huge = Buffer.from(`{"conf":0.5,"numbers":[${'0,'.repeat(10 * MB)}0]}`);
    const form = Buffer.from(`source=${'A'.repeat(20 * MB)}`);
    const { result, grownMB, maxDelayMs, ms } = await measured(() =>
      Promise.all([
        ...Array.from({ length: 8 }, () => send(PREDICT, 'application/json', huge)),
        // Chunked, no Content-Length: refused once 64 KiB have arrived.
        send(PREDICT, 'application/json', huge, { chunked: true }),
        send(PREDICT, 'application/x-www-form-urlencoded', form),
      ]),
    );
    for (const answer of result) {
      t.equal(answer.status, 413, String(answer.error));
      t.match(
        answer.error,
        /predict body holds the parameters and a source of at most 4,096 characters: at most 65536 bytes; send a larger image as the file of a multipart\/form-data body/,
      );
    }
    t.ok(grownMB < 100, `the process grew by ${Math.round(grownMB)} MB (ten bodies of 20 MiB)`);
    t.ok(maxDelayMs < 600, `the event loop was delayed ${Math.round(maxDelayMs)} ms at most`);
    t.ok(ms < 10_000, `answered in ${Math.round(ms)} ms`);
    // Bodies of what the fields need are read as before.
    const small = await send(
      PREDICT,
      'application/json',
      Buffer.from(JSON.stringify({ source: 'not base64 at all!' })),
    );
    t.equal(small.status, 400);
    t.match(small.error, /URL, a data: URI or a base64/);
  },
);

t.test('a predict form of 20 MiB of empty parts is 400 as it arrives, unparsed', async (t) => {
  const parts = Buffer.from(
    `${Array.from({ length: 350_000 }, (_, i) => `--xyz\r\nContent-Disposition: form-data; name="f${i}"\r\n\r\n\r\n`).join('')}--xyz--\r\n`,
  );
  const { result, maxDelayMs, grownMB } = await measured(() =>
    Promise.all(Array.from({ length: 4 }, () => send(PREDICT, 'multipart/form-data; boundary=xyz', parts))),
  );
  for (const answer of result) {
    t.equal(answer.status, 400);
    t.equal(answer.error, 'A predict form has the file and the parameters: at most 16 parts');
  }
  t.ok(maxDelayMs < 600, `the event loop was delayed ${Math.round(maxDelayMs)} ms at most`);
  t.ok(grownMB < 100, `the process grew by ${Math.round(grownMB)} MB`);
});

t.test('other JSON bodies: 64 KiB unless a field may hold a document, which takes JSON_BODY_LIMIT_BYTES', async (t) => {
  const url = '/api/workspaces/acme-team/members/bobby';
  const numbers = Buffer.from(`{"role":"viewer","numbers":[${'0,'.repeat(MB / 2)}0]}`);
  const { result, grownMB, maxDelayMs } = await measured(() =>
    Promise.all(Array.from({ length: 8 }, () => send(url, 'application/json', numbers, { key: world.team }))),
  );
  for (const answer of result) {
    t.equal(answer.status, 413);
    t.equal(answer.error, 'Request body larger than 65536 bytes, the most this operation takes');
  }
  t.ok(grownMB < 100, `the process grew by ${Math.round(grownMB)} MB`);
  t.ok(maxDelayMs < 600, `the event loop was delayed ${Math.round(maxDelayMs)} ms at most`);
  t.equal(
    (await call(server, 'PUT', url, { key: world.team, body: { role: 'viewer' } })).status,
    200,
    'a small body is read',
  );
  // Metadata may be 500,000 characters: its operations take more than 64 KiB, up to JSON_BODY_LIMIT_BYTES (2 MiB).
  const metadata = { notes: 'n'.repeat(400_000) };
  const patched = await call(server, 'PATCH', '/api/datasets/alice/cats', { key: alice, body: { metadata } });
  t.equal(patched.status, 200, JSON.stringify(patched.body).slice(0, 200));
  const over = await call(server, 'PATCH', '/api/datasets/alice/cats', {
    key: alice,
    body: { metadata: { notes: 'n'.repeat(3 * MB) } },
  });
  expectError(t, over, 413, /^Request body larger than 2097152 bytes \(JSON_BODY_LIMIT_BYTES\)$/);
});

t.test('a 146 KB PNG of 50 megapixels is 413 before it is decoded, eight at once in bounded memory', async (t) => {
  // 7071 × 7071 = 49,999,041 pixels: within the 50-megapixel bound, 150 MB decoded (eight at once took 1.2 GB).
  const png = await blackPng(7071, 7071);
  t.ok(png.length < 300_000, `the file is ${Math.round(png.length / 1024)} KB`);
  const { result, grownMB, ms } = await measured(() => Promise.all(Array.from({ length: 8 }, () => predictFile(png))));
  for (const answer of result) {
    t.equal(answer.status, 413, String(answer.error));
    t.match(
      answer.error,
      /^The image \(7071×7071 px png\) would take about \d+ MiB to decode, more than the 128 MiB one predict may use/,
    );
  }
  t.ok(grownMB < 60, `the process grew by ${Math.round(grownMB)} MB`);
  t.ok(ms < 5_000, `answered in ${Math.round(ms)} ms (headers only)`);
});

t.test('images within a predict’s share are predicted, several at once, each holding its share in turn', async (t) => {
  // 4000 × 3000: 36 MB of pixels and the rows being read, about 66 MiB each: three at once fit the 256 MiB.
  const png = await blackPng(4000, 3000);
  const answers = await Promise.all(Array.from({ length: 8 }, () => predictFile(png)));
  for (const answer of answers) t.equal(answer.status, 200, String(answer.error));
});

t.test(
  'a dataset image too large to decode for predict: image predict is 413, a batch run skips it and labels the rest',
  async (t) => {
    const datasetId = await createDataset(world, alice, {
      dataset: 'large',
      name: 'Large',
      task: 'detect',
      classNames: fixture.names,
    });
    // The ingest makes its thumbnail a band of rows at a time (within its budget); predict needs its pixels whole.
    const zip = await zipOf({
      'images/train/huge.png': await blackPng(7071, 7071),
      'images/train/small.png': await blackPng(64, 48),
    });
    const job = await ingestArchive(t, world, alice, 'alice', 'large', datasetId, 'large.zip', zip);
    t.equal(job.status, 'completed', String(job.error));
    const images = await imagesOf(world, alice, 'alice', 'large');
    const huge = images.find((image) => image.name === 'huge.png')!;
    const modelId = 'ul://alice/vision/detector';
    const refused = await call(server, 'POST', `/api/images/${huge.id}/predict`, { key: alice, body: { modelId } });
    expectError(t, refused, 413, /^The image \(7071×7071 px png\) would take about \d+ MiB to decode/);
    await server.services().billing.grant('alice', 10_000, 'tests');
    const started = await call<{ jobId: string }>(server, 'POST', '/api/datasets/alice/large/predict/batch', {
      key: alice,
      body: { modelId },
    });
    t.equal(started.status, 202, JSON.stringify(started.body));
    const deadline = Date.now() + 60_000;
    let lastRun: {
      failed: boolean;
      error: string | null;
      results: { processed: number; total: number } | null;
    } | null = null;
    while (Date.now() < deadline) {
      const answer = await call<{ activeJob: unknown; lastRun: typeof lastRun }>(
        server,
        'GET',
        '/api/datasets/alice/large/predict/batch',
        { key: alice },
      );
      if (answer.body.activeJob === null && answer.body.lastRun) {
        lastRun = answer.body.lastRun;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.match(
      lastRun,
      { failed: false, error: null, results: { processed: 1, total: 2 } },
      'the run completed: the small image processed, the huge one skipped',
    );
  },
);
