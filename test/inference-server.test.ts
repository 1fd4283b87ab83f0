// A deployment's inference server as its own process on a model trained by the suite: health names the served file,
// predict answers what the same model gives in-process (the control plane's answer), and every bad request is a clear
// 4xx: no token, too large, not an image, a URL source, video; the server carries on after each.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { decodeImage, OnnxModel, summarize } from '../inference/src/index.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { predictAt, SERVICE_TOKEN, startInferenceServer } from './helpers/inference-server.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';

// The first run trains the fixture model (minutes on 2 cores); later runs take it from .cache/test-models.
t.setTimeout(20 * 60_000);

const MAX_BYTES = 200_000;
// The annotation fixture: trained long enough for boxes of real confidence.
const fixture = await annotatingModel('detect');
const server = await startInferenceServer(t, fixture.onnx, {
  VP_MAX_BYTES: String(MAX_BYTES),
  VP_MODEL_NAME: 'alice/shapes/detector',
});
const dir = mkdtempSync(join(tmpdir(), 'vp-inference-server-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const pictures = await writeTestPictures(dir);

t.test('health: 200 without a key, naming the task and the served file', async (t) => {
  const response = await fetch(`${server.url}/health`);
  t.equal(response.status, 200);
  t.same(await response.json(), {
    healthy: true,
    task: 'detect',
    modelSha256: createHash('sha256').update(readFileSync(fixture.onnx)).digest('hex'),
  });
});

t.test('predict answers what the same model gives in-process, for every test picture', async (t) => {
  const model = await OnnxModel.load(fixture.onnx, { intraOpThreads: 1 });
  t.teardown(() => model.release());
  let detections = 0;
  for (const picture of pictures) {
    const bytes = readFileSync(picture.file);
    const { status, body } = await predictAt(server.url, bytes, { conf: '0.01', decimals: '3' });
    t.equal(status, 200, picture.label);
    const prediction = await model.predict(await decodeImage(bytes, { maxPixels: 5e7 }), {
      conf: 0.01,
      iou: 0.7,
      imgsz: Math.max(...model.info.imgsz),
    });
    const expected = summarize(prediction, model.info.names, { normalize: false, decimals: 3 });
    t.same(body.images?.[0]?.results, expected, `${picture.label}: the same boxes, classes and confidences`);
    detections += expected.length;
  }
  t.ok(detections > 0, `the pictures have detections (${detections})`);
});

t.test('a base64 source and JSON parameters are answered like a file', async (t) => {
  const bytes = readFileSync(pictures[0]!.file);
  const file = await predictAt(server.url, bytes, { conf: '0.01' });
  const response = await fetch(`${server.url}/predict`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source: `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`, conf: 0.01 }),
  });
  const body = (await response.json()) as typeof file.body;
  t.equal(response.status, 200);
  t.same(body.images?.[0]?.results, file.body.images?.[0]?.results);
  t.match(body.metadata, {
    model: 'alice/shapes/detector',
    task: 'detect',
    imageCount: 1,
    classNames: ['square', 'disc', 'triangle'],
  });
});

t.test('bad requests are clear 4xx answers and the server carries on', async (t) => {
  const bytes = readFileSync(pictures[0]!.file);
  const noToken = await predictAt(server.url, bytes, {}, null);
  t.equal(noToken.status, 401);
  t.match(noToken.body.error, /bearer token/);
  t.equal((await predictAt(server.url, bytes, {}, 'wrong-token')).status, 401, 'a wrong token');
  t.equal((await fetch(`${server.url}/camera`)).status, 401, 'everything but health needs the token');

  const large = await predictAt(server.url, new Uint8Array(MAX_BYTES + 1));
  t.equal(large.status, 413);
  t.match(large.body.error, /VP_MAX_BYTES/);
  const notImage = await predictAt(server.url, Buffer.from('this is not an image'));
  t.equal(notImage.status, 400);
  t.match(notImage.body.error, /not an image/);
  const url = await predictAt(server.url, undefined, { source: 'https://example.com/picture.jpg' });
  t.equal(url.status, 400);
  t.match(url.body.error, /URL.*predict URL/);
  const video = await predictAt(
    server.url,
    Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypisom'), Buffer.alloc(64)]),
  );
  t.equal(video.status, 400);
  t.match(video.body.error, /Video input is not supported/);
  const range = await predictAt(server.url, bytes, { conf: '7' });
  t.equal(range.status, 400);
  t.match(range.body.error, /body\.conf/);
  const camera = await fetch(`${server.url}/camera`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
    body: '{"url": "http://camera.invalid/", "fps": 5}',
  });
  t.equal(camera.status, 400);
  t.match(await camera.json(), { error: /body\.url: must be an rtsp/ });

  t.equal((await predictAt(server.url, bytes)).status, 200, 'still serving');
});

t.test('its log is one JSON line per event', async (t) => {
  const lines = server
    .output()
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { severity: string; message: string; time: string });
  t.match(lines, [
    { severity: 'INFO', message: 'listening' },
    { severity: 'INFO', message: 'model loaded' },
  ]);
  t.ok(lines.every((line) => !Number.isNaN(Date.parse(line.time))));
});
