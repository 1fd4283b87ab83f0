// POST /api/models/{owner}/{project}/{model}/predict over HTTP against a real control plane and real onnxruntime: the
// parameters' ranges, 413 (a huge PNG header among them), hostile input (not an image, truncated, video, URLs that fail or are
// refused), who may predict with which model, the Predict rate category, and the automatic ONNX export it waits for.
import { readFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';
import t from 'tap';
import { Host } from '../control-plane/src/hosts/host.entity.ts';
import { exportById, settleExport } from '../control-plane/src/exports/export.store.ts';
import { createModel, createProject, uploadWeights } from './helpers/models.ts';
import { seedOnnxExport } from './helpers/predict.ts';
import { startHttpSource } from './helpers/http-source.ts';
import { call, type Fetched } from './helpers/server.ts';
import { startWorld } from './helpers/world.ts';
import { trainedModel } from './helpers/yolo-models.ts';

const MAX_BYTES = 300_000;
const fixture = await trainedModel('detect');
const world = await startWorld(t, {
  PREDICT_MAX_BYTES: String(MAX_BYTES),
  OUTBOUND_ALLOWED_NETWORKS: '127.0.0.2',
  RATE_LIMIT_PREDICT: '1000',
  PREDICT_EXPORT_WAIT_SECONDS: '2',
  PREDICT_WORKERS: '1',
});
const { server, alice, bobby } = world;

interface Answer {
  error?: string;
  images: Array<{
    shape: number[];
    speed: Record<string, number>;
    results: Array<{ name: string; class: number; confidence: number; box: Record<string, number> }>;
  }>;
  metadata: {
    imageCount: number;
    classNames: string[];
    task: string;
    model: string;
    functionTimeCall: number;
    version: Record<string, string>;
  };
}
type Part = { bytes: Uint8Array; name?: string; type?: string };

async function predict(
  path: string,
  options: { key?: string; fields?: Record<string, string>; file?: Part; files?: Part[] } = {},
): Promise<Fetched<Answer>> {
  const form = new FormData();
  for (const [name, value] of Object.entries(options.fields ?? {})) form.append(name, value);
  for (const part of options.files ?? (options.file ? [options.file] : []))
    form.append('file', new Blob([part.bytes], { type: part.type ?? 'image/jpeg' }), part.name ?? 'image.jpg');
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: options.key ? { authorization: `Bearer ${options.key}` } : {},
    body: form,
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Answer };
}

/** A picture with shapes like the fixture's training images (the model finds some of them). */
const picture = await sharp(
  Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120"><rect width="100%" height="100%" fill="#c4c4bc"/>' +
      '<rect x="20" y="20" width="40" height="40" fill="#e02020"/><circle cx="110" cy="70" r="25" fill="#2040e0"/></svg>',
  ),
)
  .removeAlpha()
  .jpeg({ quality: 90 })
  .toBuffer();

/** A model of alice's with the fixture's weights (trained at the fixture's size) and its ONNX export. */
async function detector(project: string, slug: string): Promise<{ id: string; path: string }> {
  const model = await createModel(world, alice, {
    project,
    model: slug,
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
  await seedOnnxExport(server, model.id, fixture.onnx);
  return { id: model.id, path: `/api/models/alice/${project}/${slug}/predict` };
}

await createProject(world, alice, { project: 'vision', name: 'vision' });
await createProject(world, alice, { project: 'open', name: 'open', visibility: 'public' });
const privateModel = await detector('vision', 'detector');
const publicModel = await detector('open', 'shared');

t.test('a multipart image gives ultralytics-shaped results', async (t) => {
  const answer = await predict(privateModel.path, { key: alice, file: { bytes: picture } });
  t.equal(answer.status, 200, JSON.stringify(answer.body));
  const [image] = answer.body.images;
  t.strictSame(image!.shape, [120, 160], 'shape is [height, width]');
  t.ok(
    ['preprocess', 'inference', 'postprocess'].every((stage) => typeof image!.speed[stage] === 'number'),
    'speed per stage',
  );
  // Rows themselves (against ultralytics, normalize, decimals, conf) are checked in predict-e2e, on a model trained to find shapes.
  t.ok(Array.isArray(image!.results), 'results rows');
  t.strictSame(answer.body.metadata.classNames, fixture.names);
  t.equal(answer.body.metadata.task, 'detect');
  t.equal(answer.body.metadata.imageCount, 1);
  t.equal(answer.body.metadata.model, 'alice/vision/detector');
  t.notMatch(JSON.stringify(answer.body), /\/tmp\/|\.onnx|ws\//, 'no internal paths');

  const parameters = await predict(privateModel.path, {
    key: alice,
    file: { bytes: picture },
    fields: { normalize: 'true', decimals: '2', conf: '0.3', iou: '0.5', imgsz: '96', vid_stride: '3', bits: '16' },
  });
  t.equal(parameters.status, 200, 'every parameter at a valid value');
});

t.test('source: a base64 data URI, plain base64, an allowed URL', async (t) => {
  const small = await sharp(picture).resize(40, 30).jpeg({ quality: 50 }).toBuffer();
  t.ok(small.length * 1.4 < 4000, 'small enough for a 4,096-character source');
  const dataUri = await predict(privateModel.path, {
    key: alice,
    fields: { source: `data:image/jpeg;base64,${small.toString('base64')}` },
  });
  t.equal(dataUri.status, 200, JSON.stringify(dataUri.body));
  t.strictSame(dataUri.body.images[0]!.shape, [30, 40]);
  // urlencoded, as the SDK sends a body without a file.
  const plain = await fetch(`${server.url}${privateModel.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ source: small.toString('base64'), imgsz: '64' }),
  });
  t.equal(plain.status, 200, await plain.clone().text());
  const source = await startHttpSource(t, '127.0.0.2', (_req, res) => res.end(picture));
  const fetched = await predict(privateModel.path, { key: alice, fields: { source: `${source.origin}/picture.jpg` } });
  t.equal(fetched.status, 200, JSON.stringify(fetched.body));
  t.strictSame(fetched.body.images[0]!.shape, [120, 160]);
});

t.test('parameters out of range are 400 naming the field', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ conf: '0' }, /conf/],
    [{ conf: '1.5' }, /conf/],
    [{ conf: 'high' }, /conf/],
    [{ iou: '0.96' }, /iou/],
    [{ iou: '-0.1' }, /iou/],
    [{ imgsz: '31' }, /imgsz/],
    [{ imgsz: '1281' }, /imgsz/],
    [{ imgsz: '64.5' }, /imgsz/],
    [{ decimals: '11' }, /decimals/],
    [{ vid_stride: '0' }, /vid_stride/],
    [{ bits: '10' }, /bits/],
    [{ normalize: 'maybe' }, /normalize/],
    [{ confidence: '0.5' }, /confidence/],
    [{ source: 'x'.repeat(4097) }, /source/],
  ];
  for (const [fields, named] of cases) {
    const answer = await predict(privateModel.path, {
      key: alice,
      fields,
      file: fields.source ? undefined : { bytes: picture },
    });
    t.equal(answer.status, 400, `${JSON.stringify(fields).slice(0, 60)} → 400`);
    t.match(answer.body.error, named, String(answer.body.error));
  }
  const both = await predict(privateModel.path, {
    key: alice,
    fields: { source: picture.toString('base64').slice(0, 100) },
    file: { bytes: picture },
  });
  t.equal(both.status, 400);
  t.match(both.body.error, /file or source, not both/);
  const neither = await predict(privateModel.path, { key: alice, fields: { conf: '0.5' } });
  t.equal(neither.status, 400);
  t.match(neither.body.error, /file .*or source/);
  const textFile = await fetch(`${server.url}${privateModel.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}` },
    body: (() => {
      const form = new FormData();
      form.append('file', 'not a file');
      return form;
    })(),
  });
  t.equal(textFile.status, 400);
  const badType = await call(server, 'POST', privateModel.path, {
    key: alice,
    rawBody: 'hello',
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(badType.status, 400);
  t.match(badType.body.error, /multipart\/form-data/);
  const badBase64 = await predict(privateModel.path, { key: alice, fields: { source: 'not base64 at all!' } });
  t.equal(badBase64.status, 400);
  t.match(badBase64.body.error, /URL, a data: URI or a base64/);
});

/** A PNG of only a header that claims `width` × `height` pixels (and one tiny compressed row). */
function pngHeader(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(8 + data.length + 4);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(1 + width * 3 > 4096 ? 4096 : 1 + width * 3))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

t.test('hostile input is a clear 400 or 413, never a 500, and the server carries on', async (t) => {
  const hostile: Array<[string, Part, RegExp]> = [
    ['text', { bytes: Buffer.from('this is not an image'), type: 'text/plain', name: 'a.txt' }, /not an image/],
    ['empty file', { bytes: Buffer.alloc(0) }, /not an image|empty/],
    ['truncated JPEG', { bytes: picture.subarray(0, Math.floor(picture.length / 2)) }, /not an image/],
    [
      'MP4 video',
      {
        bytes: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom\0\0\0\0isommp41'), Buffer.alloc(64)]),
        type: 'application/octet-stream',
        name: 'clip.mp4',
      },
      /Video input is not supported/,
    ],
  ];
  for (const [label, file, message] of hostile) {
    const answer = await predict(privateModel.path, { key: alice, file });
    t.equal(answer.status, 400, `${label} → 400: ${answer.body.error}`);
    t.match(answer.body.error, message, label);
  }
  // Refused from its header: decoded, it would take far more than a predict's share of the decoding memory.
  const huge = await predict(privateModel.path, {
    key: alice,
    file: { bytes: pngHeader(50_000, 50_000), type: 'image/png', name: 'huge.png' },
  });
  t.equal(huge.status, 413, `50,000 × 50,000 PNG header → 413: ${huge.body.error}`);
  t.match(huge.body.error, /50000×50000 px png\) would take about \d+ MiB to decode/);
  const large = await predict(privateModel.path, { key: alice, file: { bytes: Buffer.alloc(MAX_BYTES + 1, 1) } });
  t.equal(large.status, 413, 'a file over PREDICT_MAX_BYTES');
  t.match(large.body.error, /PREDICT_MAX_BYTES/);
  const announced = await fetch(`${server.url}${privateModel.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${alice}`, 'content-type': 'multipart/form-data; boundary=x' },
    body: Buffer.alloc(MAX_BYTES * 2),
  });
  t.equal(announced.status, 413, 'a body over the bound');

  const big = await startHttpSource(t, '127.0.0.2', (_req, res) => {
    res.write(Buffer.alloc(MAX_BYTES));
    res.end(Buffer.alloc(MAX_BYTES));
  });
  const tooBig = await predict(privateModel.path, { key: alice, fields: { source: `${big.origin}/big.jpg` } });
  t.equal(tooBig.status, 413, 'a URL whose download passes the bound');
  const internal = await startHttpSource(t, '127.0.0.1', (_req, res) => res.end(picture));
  const refused = await predict(privateModel.path, {
    key: alice,
    fields: { source: `${internal.origin}/picture.jpg` },
  });
  t.equal(refused.status, 400, 'an internal address is refused');
  t.match(refused.body.error, /source could not be fetched/);
  t.strictSame(internal.requests, [], 'the internal server was never asked');
  const missing = await predict(privateModel.path, {
    key: alice,
    fields: { source: `${big.origin.replace(/:\d+$/, ':1')}/gone.jpg` },
  });
  t.equal(missing.status, 400, 'an unreachable URL');
  t.match(missing.body.error, /source could not be fetched/);
  const notFound = await startHttpSource(t, '127.0.0.2', (_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  const absent = await predict(privateModel.path, { key: alice, fields: { source: `${notFound.origin}/x.jpg` } });
  t.equal(absent.status, 400);
  t.match(absent.body.error, /HTTP 404/);

  const after = await predict(privateModel.path, { key: alice, file: { bytes: picture } });
  t.equal(after.status, 200, 'the server still predicts');
});

t.test('who may predict: public models for anyone, private ones for their workspace', async (t) => {
  t.equal((await predict(publicModel.path, { file: { bytes: picture } })).status, 200, 'anonymous, public model');
  t.equal(
    (await predict(publicModel.path, { key: bobby, file: { bytes: picture } })).status,
    200,
    "another workspace's key, public model",
  );
  const hidden = await predict(privateModel.path, { key: bobby, file: { bytes: picture } });
  t.equal(hidden.status, 404, "another workspace's private model");
  t.match(hidden.body.error, /not found/);
  t.equal((await predict(privateModel.path, { file: { bytes: picture } })).status, 404, 'anonymous, private model');
  t.equal(
    (await predict(privateModel.path, { key: world.viewer, file: { bytes: picture } })).status,
    404,
    'a team key, personal model',
  );
  t.equal(
    (await predict('/api/models/alice/vision/nothing/predict', { key: alice, file: { bytes: picture } })).status,
    404,
  );
  await createModel(world, alice, { project: 'vision', model: 'untrained' });
  const untrained = await predict('/api/models/alice/vision/untrained/predict', {
    key: alice,
    file: { bytes: picture },
  });
  t.equal(untrained.status, 409, 'a model without weights');
  t.match(untrained.body.error, /no weights/);
});

t.test('the Predict rate category counts against the caller', async (t) => {
  const limited = await startWorld(t, { RATE_LIMIT_PREDICT: '2' });
  await createProject(limited, limited.alice, { project: 'open', name: 'open', visibility: 'public' });
  await createModel(limited, limited.alice, { project: 'open', model: 'm' });
  const path = '/api/models/alice/open/m/predict';
  const send = (key?: string) =>
    fetch(`${limited.server.url}${path}`, {
      method: 'POST',
      headers: key ? { authorization: `Bearer ${key}` } : {},
      body: new FormData(),
    });
  t.equal((await send(limited.bobby)).status, 409, 'bobby 1 (no weights, but counted)');
  t.equal((await send(limited.bobby)).status, 409, 'bobby 2');
  const third = await send(limited.bobby);
  t.equal(third.status, 429, 'bobby 3: over the Predict limit');
  t.match(((await third.json()) as { error: string }).error, /./);
  t.equal((await send(limited.alice)).status, 409, "alice's own counter");
  t.equal(
    (await call(limited.server, 'GET', '/api/models/alice/open/m', { key: limited.bobby })).status,
    200,
    'other categories unaffected',
  );
  const document = await call<{ paths: Record<string, { post: Record<string, unknown> }> }>(
    server,
    'GET',
    '/openapi.json',
  );
  t.equal(
    document.body.paths['/api/models/{owner}/{project}/{model}/predict']!.post['x-rate-limit-category'],
    'predict',
  );
});

t.test(
  'imgsz defaults to the size the export was made at when the platform was not told the training size',
  async (t) => {
    const model = await createModel(world, alice, { project: 'vision', model: 'size-untold', task: 'detect' });
    await uploadWeights(world, alice, model.id, readFileSync(fixture.pt));
    await seedOnnxExport(server, model.id, fixture.onnx);
    const path = '/api/models/alice/vision/size-untold/predict';
    const rows = async (fields: Record<string, string>) => {
      const answer = await predict(path, { key: alice, file: { bytes: picture }, fields: { conf: '0.01', ...fields } });
      t.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body.images[0]!.results;
    };
    const byDefault = await rows({});
    t.strictSame(
      byDefault,
      await rows({ imgsz: String(fixture.imgsz) }),
      `the same rows as at the export's ${fixture.imgsz} px`,
    );
  },
);

t.test(
  'no worker host connected: an ONNX export of the same weights made with other arguments serves predict',
  async (t) => {
    const model = await createModel(world, alice, {
      project: 'vision',
      model: 'exported-by-hand',
      task: 'detect',
      trainArgs: { imgsz: fixture.imgsz },
    });
    await uploadWeights(world, alice, model.id, Buffer.from('weights a user exported to a static ONNX'));
    await seedOnnxExport(server, model.id, fixture.onnx, { dynamic: false, imgsz: fixture.imgsz });
    const answer = await predict('/api/models/alice/vision/exported-by-hand/predict', {
      key: alice,
      file: { bytes: picture },
    });
    t.equal(answer.status, 200, JSON.stringify(answer.body));
    t.strictSame(answer.body.images[0]!.shape, [120, 160]);
  },
);

t.test('the automatic ONNX export: queued on weights, waited for, 503 while missing or failed', async (t) => {
  // Weights of their own: no completed artifact of the workspace to reuse.
  const pendingModel = await createModel(world, alice, {
    project: 'vision',
    model: 'pending',
    task: 'detect',
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, alice, pendingModel.id, Buffer.from('weights that are never exported'));
  const pending = { path: '/api/models/alice/vision/pending/predict' };
  const noHost = await predict(pending.path, { key: alice, file: { bytes: picture } });
  t.equal(noHost.status, 503, 'no worker host');
  t.match(noHost.body.error, /No worker host can export to onnx/);

  // A host that offers onnx but never runs anything: the export is queued and stays so.
  const em = server.orm.em.fork();
  em.create(Host, {
    name: 'idle-exporter',
    state: 'connected',
    hardware: { cpu: { model: 'x', cores: 2 }, memoryBytes: 2 ** 33, diskFreeBytes: 2 ** 36, cpuOnly: true, gpus: [] },
    workspace: null,
    lastHeartbeatAt: new Date(),
    exporters: ['onnx'],
  });
  await em.flush();
  const waited = await predict(pending.path, { key: alice, file: { bytes: picture } });
  t.equal(waited.status, 503);
  t.match(waited.body.error, /ONNX export .* is still queued after 2 s/);
  const listed = await call<{
    exports: Array<{ id: string; format: string; status: string; args: Record<string, unknown> }>;
  }>(server, 'GET', '/api/models/alice/vision/pending/exports', { key: alice });
  t.equal(listed.body.exports.length, 1, "the export is in the model's list");
  t.match(listed.body.exports[0], {
    format: 'onnx',
    status: 'queued',
    args: { dynamic: true, imgsz: Math.ceil(fixture.imgsz / 32) * 32 },
  });
  const again = await predict(pending.path, { key: alice, file: { bytes: picture } });
  t.equal(again.status, 503);
  const relisted = await call<{ exports: Array<{ id: string }> }>(
    server,
    'GET',
    '/api/models/alice/vision/pending/exports',
    { key: alice },
  );
  t.strictSame(
    relisted.body.exports.map((e) => e.id),
    [listed.body.exports[0]!.id],
    'a second predict follows the same export',
  );

  // It fails while a predict waits: 503 saying so; the next predict queues a new one.
  const exportId = listed.body.exports[0]!.id;
  const waiting = predict(pending.path, { key: alice, file: { bytes: picture } });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await settleExport(server.orm.em.fork() as never, exportId, { status: 'failed', error: 'onnx exporter crashed' });
  const failed = await waiting;
  t.equal(failed.status, 503);
  t.match(failed.body.error, /ONNX export failed \(onnx exporter crashed\)/);
  t.equal((await exportById(server.orm.em.fork() as never, exportId))?.status, 'failed');
  await predict(pending.path, { key: alice, file: { bytes: picture } });
  const requeued = await call<{ exports: Array<{ id: string; status: string }> }>(
    server,
    'GET',
    '/api/models/alice/vision/pending/exports',
    { key: alice },
  );
  t.equal(requeued.body.exports.length, 2, 'a new export was queued');
  t.equal(requeued.body.exports[0]!.status, 'queued');

  // Uploaded weights queue it without a predict.
  const fresh = await createModel(world, alice, { project: 'vision', model: 'fresh', trainArgs: { imgsz: 96 } });
  await uploadWeights(world, alice, fresh.id, Buffer.from('other weights'));
  const queued = await call<{ exports: Array<{ format: string; args: Record<string, unknown> }> }>(
    server,
    'GET',
    '/api/models/alice/vision/fresh/exports',
    { key: alice },
  );
  t.match(
    queued.body.exports,
    [{ format: 'onnx', args: { dynamic: true, imgsz: 96 } }],
    'queued when the upload completed',
  );
  // Weights the platform was not told the training size of: the export leaves it to the checkpoint, as yolo export does.
  const untold = await createModel(world, alice, { project: 'vision', model: 'untold' });
  await uploadWeights(world, alice, untold.id, Buffer.from('weights of an unknown size'));
  const untoldExports = await call<{ exports: Array<{ args: Record<string, unknown> }> }>(
    server,
    'GET',
    '/api/models/alice/vision/untold/exports',
    { key: alice },
  );
  t.equal(untoldExports.body.exports.length, 1);
  t.notOk(
    'imgsz' in untoldExports.body.exports[0]!.args,
    `no imgsz imposed: ${JSON.stringify(untoldExports.body.exports[0]!.args)}`,
  );
  // A clone shares the weights: its export reuses the completed artifact at once.
  const clone = await call<{ model: string }>(server, 'POST', '/api/models/alice/vision/detector/clone', {
    key: alice,
    body: { project: 'vision', model: 'detector-copy' },
  });
  t.equal(clone.status, 201);
  const cloned = await call<{ exports: Array<{ status: string }> }>(
    server,
    'GET',
    '/api/models/alice/vision/detector-copy/exports',
    { key: alice },
  );
  t.match(cloned.body.exports, [{ status: 'completed' }], "the clone's export reused the source's artifact");
  t.equal(
    (await predict('/api/models/alice/vision/detector-copy/predict', { key: alice, file: { bytes: picture } })).status,
    200,
  );
});
