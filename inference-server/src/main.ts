// vp-inference-server: a deployment's inference server (contract.ts), run by a worker agent as a service job. It
// listens at once (health answers 503 while the model loads), then serves predict (and the camera, once set) on its
// one ONNX model until SIGTERM, and drains: it stops its camera and listening, and exits once every request it had
// already accepted was answered (a replaced revision's last requests end normally; its agent's stop grace bounds the
// wait). With EMBED_COMMAND as its argument it embeds a chunk of a dataset's images instead (embed/embed-chunk.ts).
import { createServer, type ServerResponse } from 'node:http';
import { Camera } from './camera/camera.ts';
import { EMBED_COMMAND } from './contract.ts';
import { handle, type ServerState } from './routes.ts';
import { ServedModel } from './served-model.ts';
import { log } from './service-log.ts';
import { readSettings } from './settings.ts';

/** Keep-alive longer than the proxies in front of it, so they never reuse a connection this server is closing. */
const KEEP_ALIVE_MS = 75_000;

async function main(): Promise<number> {
  let state: ServerState;
  try {
    state = { settings: readSettings(process.env), model: undefined, camera: undefined };
  } catch (error) {
    log('CRITICAL', (error as Error).message);
    return 2;
  }
  const { settings } = state;
  const inFlight = new InFlight();
  const server = createServer((req, res) => {
    inFlight.add(res);
    void handle(state, req, res);
  });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1000;
  await new Promise<void>((listening, fail) => server.once('error', fail).listen(settings.port, listening));
  log('INFO', 'listening', { port: settings.port, device: settings.device, intraOpThreads: settings.intraOpThreads });
  const stopped = new Promise<string>((stop) => {
    process.once('SIGTERM', () => stop('SIGTERM')).once('SIGINT', () => stop('SIGINT'));
  });
  try {
    const started = performance.now();
    state.model = await ServedModel.load(settings);
    state.camera = new Camera(settings.ffmpeg, state.model);
    log('INFO', 'model loaded', {
      task: state.model.info.task,
      classes: state.model.info.names.length,
      sha256: state.model.sha256,
      ms: Math.round(performance.now() - started),
    });
  } catch (error) {
    // onnxruntime-node bundles the CPU provider only: CUDA's is installed apart (ONNXRUNTIME_NODE_INSTALL=cuda12).
    const hint =
      settings.device === 'cuda'
        ? " (VP_DEVICE=cuda needs a GPU and onnxruntime-node's CUDA provider, installed with ONNXRUNTIME_NODE_INSTALL=cuda12)"
        : '';
    log('CRITICAL', `the model could not be loaded: ${(error as Error).message}${hint}`, { file: settings.modelFile });
    server.close();
    return 1;
  }
  const signal = await stopped;
  log('INFO', 'stopping', { signal, inFlight: inFlight.count });
  const cameraStopped = state.camera.close();
  server.close();
  server.closeIdleConnections();
  await Promise.all([inFlight.drained(), cameraStopped]);
  server.closeAllConnections();
  await state.model.close();
  return 0;
}

/** The requests being answered; once draining, each answer closes its connection (no request follows on it). */
class InFlight {
  private readonly answering = new Set<ServerResponse>();
  private draining: (() => void) | undefined;

  get count(): number {
    return this.answering.size;
  }

  add(res: ServerResponse): void {
    this.answering.add(res);
    if (this.draining) res.setHeader('connection', 'close');
    res.once('close', () => {
      this.answering.delete(res);
      if (this.answering.size === 0) this.draining?.();
    });
  }

  drained(): Promise<void> {
    for (const res of this.answering) if (!res.headersSent) res.setHeader('connection', 'close');
    if (this.answering.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.draining = resolve));
  }
}

process.exitCode =
  process.argv[2] === EMBED_COMMAND ? await (await import('./embed/embed-chunk.ts')).embedChunk() : await main();
