// The server's routes (SERVICE_ROUTES): health without a key, everything else behind the control plane's bearer token.
// Every answer is JSON; what the caller got wrong is a 4xx `{ "error" }`, never a 500.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InferenceError } from '@vp/inference/pool';
import { invalid, PredictInputError, predictResponse, readPredictInput } from '@vp/inference/request';
import { type Camera, CameraClosed } from './camera/camera.ts';
import { parseCameraSettings } from './camera/camera-settings.ts';
import { type HealthAnswer, SERVER_ENV, SERVICE_ROUTES } from './contract.ts';
import type { ServedModel } from './served-model.ts';
import { log } from './service-log.ts';
import type { ServerSettings } from './settings.ts';

class Answer extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** A PUT /camera body is a few settings. */
const MAX_CAMERA_BODY_BYTES = 16 * 1024;

const URL_SOURCE_REFUSED =
  "source URLs are not fetched by a deployment's inference server: send them to the platform's predict URL, which fetches them (or send the image as file or base64)";

export interface ServerState {
  settings: ServerSettings;
  /** Undefined until the model has loaded. */
  model: ServedModel | undefined;
  /** Made with the model. */
  camera: Camera | undefined;
}

/** One request, answered whatever happens. */
export async function handle(state: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    const { status, body } = await route(state, req);
    reply(res, status, body);
  } catch (error) {
    if (error instanceof Answer || error instanceof PredictInputError) {
      reply(res, error.status, { error: error.message });
      return;
    }
    log('ERROR', 'a request failed', { path: req.url, error: (error as Error).message });
    reply(res, 500, { error: `internal error: ${(error as Error).message}` });
  }
}

async function route(state: ServerState, req: IncomingMessage): Promise<{ status: number; body: unknown }> {
  const path = new URL(req.url ?? '/', 'http://service.invalid').pathname;
  if (path === SERVICE_ROUTES.health) {
    allow(req, ['GET', 'HEAD']);
    const { model } = state;
    const answer: HealthAnswer = {
      healthy: model !== undefined,
      task: model?.info.task ?? '',
      modelSha256: model?.sha256 ?? '',
    };
    return { status: model ? 200 : 503, body: answer };
  }
  authorize(req, state.settings.token);
  if (path === SERVICE_ROUTES.predict) {
    allow(req, ['POST']);
    return { status: 200, body: await predict(state, req) };
  }
  if (path === SERVICE_ROUTES.camera) {
    allow(req, ['GET', 'PUT', 'DELETE']);
    return { status: 200, body: await cameraRoute(state, req) };
  }
  throw new Answer(404, `no route ${path}: this server answers ${Object.values(SERVICE_ROUTES).join(', ')}`);
}

async function predict(state: ServerState, req: IncomingMessage): Promise<unknown> {
  const { model, settings } = state;
  if (!model) throw new Answer(503, 'the model is still loading');
  const startedAt = performance.now();
  const input = await readPredictInput(req, { maxBytes: settings.maxBytes, setting: SERVER_ENV.maxBytes }, () =>
    Promise.reject(invalid(URL_SOURCE_REFUSED)),
  );
  const { parameters, image } = input;
  try {
    const run = await model.run(image, parameters);
    return await predictResponse(run, parameters, { model: settings.modelName, startedAt });
  } catch (error) {
    if (error instanceof InferenceError && error.kind === 'image')
      throw invalid(`The input is not an image this server can read: ${error.message}`);
    // The served model's run failed or gave outputs no export gives (or flooded its worker): the model's, not the server's.
    if (error instanceof InferenceError && error.kind === 'model')
      throw new Answer(422, `The model cannot be run on this input: ${error.message}`);
    throw error;
  }
}

async function cameraRoute(state: ServerState, req: IncomingMessage): Promise<unknown> {
  const { camera } = state;
  if (!camera) throw new Answer(503, 'the model is still loading');
  if (req.method === 'PUT') {
    const settings = parseCameraSettings(await readJson(req, MAX_CAMERA_BODY_BYTES));
    return camera.set(settings).catch((error: unknown) => {
      throw error instanceof CameraClosed ? new Answer(503, error.message) : error;
    });
  }
  if (req.method === 'DELETE') return camera.stop();
  return camera.state;
}

/** A JSON request body of at most `maxBytes` (413 past it). */
async function readJson(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > maxBytes) throw new Answer(413, `the body is larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new Answer(400, 'the body must be JSON camera settings: {"url": "rtsp://…", "fps": …}');
  }
}

function allow(req: IncomingMessage, methods: string[]): void {
  if (!methods.includes(req.method ?? ''))
    throw new Answer(405, `method ${req.method} not allowed; use ${methods.join(', ')}`);
}

function authorize(req: IncomingMessage, token: string): void {
  const given = Buffer.from(/^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
  const expected = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new Answer(401, 'a valid bearer token is required (Authorization: Bearer <token>)');
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  // A body left unread (an early 401 or 413) is read and dropped by node:http, so the client sees this answer.
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
