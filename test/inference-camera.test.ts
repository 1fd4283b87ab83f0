// A deployment's inference server reading a camera: a real RTSP stream (gst-rtsp-server serving a test picture) read by
// the server's real ffmpeg and predicted by its model. The camera finds what predict finds in the same picture, keeps to
// its fps, survives a stalled or unreachable camera (predict unaffected, no password in what it says), refuses bad
// settings without changing anything, and leaves no ffmpeg behind after DELETE or SIGTERM.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import type { CameraState } from '../inference-server/src/contract.ts';
import { annotatingModel } from './helpers/auto-annotate.ts';
import { freePort } from './helpers/agent.ts';
import { eventually } from './helpers/host-jobs.ts';
import { writeTestPictures } from './helpers/inference-images.ts';
import { predictAt, SERVICE_TOKEN, startInferenceServer } from './helpers/inference-server.ts';
import { childProcesses, isRunning, startRtspSource } from './helpers/rtsp-source.ts';

// The first run trains the fixture model (minutes on 2 cores); later runs take it from .cache/test-models.
t.setTimeout(20 * 60_000);

const FPS = 4;
const fixture = await annotatingModel('detect');
const server = await startInferenceServer(t, fixture.onnx);
const dir = mkdtempSync(join(tmpdir(), 'vp-inference-camera-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
// Two confident discs: the frames, re-encoded twice (H.264, then JPEG), show the model the same shapes.
const picture = (await writeTestPictures(dir)).find((candidate) => candidate.label === 'square PNG')!;
const source = await startRtspSource(t, picture.file);

async function camera(method: 'GET' | 'PUT' | 'DELETE', body?: unknown, token: string | null = SERVICE_TOKEN) {
  const init: RequestInit = {
    method,
    headers: { 'content-type': 'application/json', ...(token !== null && { authorization: `Bearer ${token}` }) },
  };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const response = await fetch(`${server.url}/camera`, init);
  return { status: response.status, body: (await response.json()) as CameraState & { error?: string } };
}

/** Polls GET /camera until `done` holds; fails with the last state after `timeoutMs`. */
async function cameraUntil(done: (state: CameraState) => boolean, timeoutMs = 30_000): Promise<CameraState> {
  let last: CameraState | undefined;
  const reached = async () => {
    last = (await camera('GET')).body;
    return done(last) && last;
  };
  return eventually(reached, 'the camera', timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}: ${JSON.stringify(last)}`);
  });
}

const ffmpegs = () => childProcesses(server.pid, 'ffmpeg');
const namesOf = (results: unknown[]) => (results as Array<{ name: string }>).map((row) => row.name).sort();
const countsOf = (results: unknown[]) =>
  Object.fromEntries(
    [...new Set(namesOf(results))].map((name) => [name, namesOf(results).filter((other) => other === name).length]),
  );

const predicted = await predictAt(server.url, readFileSync(picture.file));
const expected = predicted.body.images![0]!.results;

t.test('the camera needs the bearer token', async (t) => {
  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    const { status, body } = await camera(method, method === 'PUT' ? { url: source.url, fps: FPS } : undefined, null);
    t.equal(status, 401, method);
    t.match(body.error, /bearer token/);
  }
  t.equal((await camera('GET', undefined, 'wrong-token')).status, 401, 'a wrong token');
  t.same(ffmpegs(), [], 'no camera started');
});

t.test('off until set', async (t) => {
  const { status, body } = await camera('GET');
  t.equal(status, 200);
  t.same(body, { url: null, state: 'off', framesRead: 0, framesPredicted: 0, framesDropped: 0, counts: {} });
});

t.test('a streaming camera finds what predict finds in the same picture, at its fps', async (t) => {
  t.ok(expected.length > 0, `predict finds ${JSON.stringify(countsOf(expected))}`);
  const put = await camera('PUT', { url: source.url, fps: FPS });
  t.equal(put.status, 200);
  t.match(put.body, { url: source.url, fps: FPS, state: 'connecting', framesRead: 0, framesPredicted: 0 });
  const streaming = await cameraUntil((state) => state.state === 'streaming' && state.framesPredicted > 0);
  t.same(namesOf(streaming.latest!.results), namesOf(expected), 'the same classes, as many of each');
  t.same(streaming.counts, countsOf(expected));
  t.ok(Date.parse(streaming.latest!.at) > Date.now() - 10_000, 'latest is a recent frame');
  t.equal(ffmpegs().length, 1, 'one ffmpeg reads it');

  // The source sends 10 frames a second; ffmpeg hands over FPS (after its first second, which may catch up).
  await sleep(1500);
  const before = await camera('GET');
  const started = Date.now();
  await sleep(4000);
  const after = await camera('GET');
  const seconds = (Date.now() - started) / 1000;
  const read = after.body.framesRead - before.body.framesRead;
  t.ok(read >= FPS * seconds * 0.5, `frames keep coming (${read} in ${seconds.toFixed(1)} s)`);
  t.ok(read <= FPS * seconds + 2, `at most ${FPS} frames a second (${read} in ${seconds.toFixed(1)} s)`);
  t.ok(after.body.framesPredicted > before.body.framesPredicted, 'and are predicted');
  t.same(after.body.counts, countsOf(expected));
  t.equal((await predictAt(server.url, readFileSync(picture.file))).status, 200, 'predict answers meanwhile');
});

t.test('bad settings are 400 and change nothing', async (t) => {
  const reader = ffmpegs();
  const bad: Array<[unknown, RegExp]> = [
    [{ url: 'http://127.0.0.1/stream', fps: 5 }, /body\.url: must be an rtsp/],
    [{ url: 'rtsp://', fps: 5 }, /body\.url/],
    [{ url: `${source.url} -f null`, fps: 5 }, /body\.url: must not hold spaces/],
    [{ url: source.url }, /body\.fps/],
    [{ url: source.url, fps: 0.05 }, /body\.fps: must be a number from 0\.1 to 30/],
    [{ url: source.url, fps: 31 }, /body\.fps/],
    [{ url: source.url, fps: 5, conf: 2 }, /body\.conf/],
    [{ url: source.url, fps: 5, iou: -1 }, /body\.iou/],
    [{ url: source.url, fps: 5, imgsz: 4000 }, /body\.imgsz/],
    [{ url: source.url, fps: 5, speed: 'fast' }, /speed/],
    ['{"url": ', /JSON/],
    [[source.url, 5], /body/],
  ];
  for (const [body, message] of bad) {
    const answer = await camera('PUT', body);
    t.equal(answer.status, 400, JSON.stringify(body));
    t.match(answer.body.error, message);
  }
  const { body } = await camera('GET');
  t.match(body, { url: source.url, fps: FPS, state: 'streaming' }, 'the camera is unchanged');
  t.same(ffmpegs(), reader, 'the same ffmpeg reads it');
});

t.test('a stalled camera fails, predict carries on, and it is read again once it sends frames', async (t) => {
  process.kill(source.pid, 'SIGSTOP');
  const stalled = await cameraUntil((state) => state.state === 'failed');
  t.match(stalled.error, /no frame for 10 s/);
  t.equal((await predictAt(server.url, readFileSync(picture.file))).status, 200, 'predict answers');
  process.kill(source.pid, 'SIGCONT');
  const again = await cameraUntil((state) => state.state === 'streaming');
  t.notOk(again.error, 'the error is gone');
  t.equal(ffmpegs().length, 1, 'one ffmpeg reads it');
});

t.test(
  'an unreachable camera fails with ffmpeg’s reason, its password never shown, and predict carries on',
  async (t) => {
    const previous = ffmpegs();
    const url = `rtsp://viewer:pa55word@127.0.0.1:${await freePort()}/stream`;
    const put = await camera('PUT', { url, fps: 2, conf: 0.5 });
    t.equal(put.status, 200);
    t.equal(put.body.url, url.replace('pa55word', '***'));
    t.same(put.body.latest, undefined, 'the previous camera’s frames are gone');
    t.notOk(previous.some(isRunning), 'the previous ffmpeg was stopped');
    const failed = await cameraUntil((state) => state.state === 'failed');
    t.match(failed.error, /Connection refused/);
    t.notMatch(failed.error, /pa55word/);
    t.equal((await predictAt(server.url, readFileSync(picture.file))).status, 200, 'predict answers');
    // Retried 2 s later, then 4 s after that failed too: the log says so.
    const failures = () =>
      server
        .output()
        .split('\n')
        .filter((line) => line.includes('"camera failed"') && line.includes('viewer:***@'));
    await eventually(async () => failures().length >= 2, 'two failures in the log', 15_000);
    t.match(
      failures().map((line) => JSON.parse(line) as unknown),
      [
        { severity: 'WARNING', retryInSeconds: 2 },
        { severity: 'WARNING', retryInSeconds: 4 },
      ],
    );
    t.match(server.output(), /"message":"camera connecting".*"url":"rtsp:\/\/viewer:\*\*\*@/);
    t.notMatch(server.output(), /pa55word/, 'the log never shows the password');
  },
);

t.test('DELETE stops the camera and its ffmpeg', async (t) => {
  await camera('PUT', { url: source.url, fps: FPS });
  await cameraUntil((state) => state.state === 'streaming');
  const reader = ffmpegs();
  t.equal(reader.length, 1);
  const { status, body } = await camera('DELETE');
  t.equal(status, 200);
  t.match(body, { url: null, state: 'off' });
  t.notOk(reader.some(isRunning), 'ffmpeg has exited');
  t.match((await camera('GET')).body, { url: null, state: 'off' });
  t.same((await camera('DELETE')).body.state, 'off', 'deleting no camera is fine');
});

t.test('SIGTERM with a camera running: the server exits and no ffmpeg remains', async (t) => {
  await camera('PUT', { url: source.url, fps: FPS });
  await cameraUntil((state) => state.state === 'streaming');
  const reader = ffmpegs();
  t.equal(reader.length, 1);
  process.kill(server.pid, 'SIGTERM');
  t.equal(await server.exited, 0);
  t.notOk(reader.some(isRunning), 'ffmpeg has exited');
  t.match(server.output(), /"message":"camera stopped"/);
});
