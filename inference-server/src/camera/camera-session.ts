// One camera setting's life (a PUT until the next PUT or DELETE): ffmpeg streams frames, each predicted as predict
// does; one prediction runs at a time and only the newest frame waits for it (the others are dropped), so a slow model
// never makes the reader fall behind or hold frames. A stream that ends is retried after a growing pause. Nothing here
// throws: a camera that fails is a state, never a crash.
import { PredictParameters } from '@vp/inference/request';
import { summarize, type SummaryRow } from '@vp/inference/summary';
import type { CameraState } from '../contract.ts';
import type { ServedModel } from '../served-model.ts';
import { log } from '../service-log.ts';
import { type CameraConfig, maskedUrl } from './camera-settings.ts';
import { FfmpegStream } from './ffmpeg-stream.ts';

const FIRST_RETRY_MS = 2_000;
const LAST_RETRY_MS = 30_000;
/** Results rows as predict writes them by default (pixels, its rounding). */
const { normalize, decimals } = PredictParameters.parse({});

interface Frame {
  jpeg: Buffer;
  at: string;
}

export class CameraSession {
  readonly #config: CameraConfig;
  readonly #ffmpeg: string;
  readonly #model: ServedModel;
  readonly #url: string;
  #state: CameraState;
  #stream: FfmpegStream | undefined;
  #retry: NodeJS.Timeout | undefined;
  #retryMs = FIRST_RETRY_MS;
  #stopped = false;
  #predicting = false;
  #waiting: Frame | undefined;
  /** The last prediction error logged, so a model failing on every frame logs once. */
  #predictError: string | undefined;

  constructor(config: CameraConfig, ffmpeg: string, model: ServedModel) {
    this.#config = config;
    this.#ffmpeg = ffmpeg;
    this.#model = model;
    this.#url = maskedUrl(config.url);
    this.#state = {
      url: this.#url,
      fps: config.fps,
      state: 'connecting',
      framesRead: 0,
      framesPredicted: 0,
      framesDropped: 0,
      counts: {},
    };
    this.#connect();
  }

  get state(): CameraState {
    return structuredClone(this.#state);
  }

  /** Ends the stream (ffmpeg has exited when it resolves) and every retry. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#waiting = undefined;
    await this.#stream?.stop();
    log('INFO', 'camera stopped', { url: this.#url });
  }

  #connect(): void {
    this.#state.state = 'connecting';
    log('INFO', 'camera connecting', { url: this.#url, fps: this.#config.fps });
    try {
      this.#stream = new FfmpegStream(
        { ffmpeg: this.#ffmpeg, url: this.#config.url, fps: this.#config.fps },
        {
          frame: (jpeg) => this.#read({ jpeg, at: new Date().toISOString() }),
          ended: (reason) => this.#failed(reason),
        },
      );
    } catch (error) {
      // spawn() throws for what it cannot even try (such as too many processes): a failure like any other.
      this.#failed(`ffmpeg could not be started (${(error as Error).message})`);
    }
  }

  #read(frame: Frame): void {
    this.#state.framesRead += 1;
    if (this.#state.state !== 'streaming') {
      this.#state.state = 'streaming';
      delete this.#state.error;
      this.#retryMs = FIRST_RETRY_MS;
      log('INFO', 'camera streaming', { url: this.#url });
    }
    if (!this.#predicting) {
      void this.#predictFrom(frame);
      return;
    }
    if (this.#waiting) this.#state.framesDropped += 1;
    this.#waiting = frame;
  }

  /** Predicts the frame, then whichever frame is newest meanwhile, until none waits. */
  async #predictFrom(first: Frame): Promise<void> {
    this.#predicting = true;
    for (let frame: Frame | undefined = first; frame && !this.#stopped; frame = this.#takeWaiting()) {
      try {
        const { prediction, info } = await this.#model.run(frame.jpeg, this.#config);
        if (this.#stopped) break;
        const results = summarize(prediction, info.names, { normalize, decimals });
        this.#state.framesPredicted += 1;
        this.#state.latest = { at: frame.at, results };
        this.#state.counts = detectionsPerClass(results);
        this.#predictError = undefined;
      } catch (error) {
        const message = (error as Error).message;
        if (message !== this.#predictError && !this.#stopped)
          log('WARNING', 'a camera frame could not be predicted', { url: this.#url, error: message });
        this.#predictError = message;
      }
    }
    this.#predicting = false;
  }

  #takeWaiting(): Frame | undefined {
    const frame = this.#waiting;
    this.#waiting = undefined;
    return frame;
  }

  #failed(reason: string): void {
    this.#stream = undefined;
    if (this.#stopped) return;
    Object.assign(this.#state, { state: 'failed', error: reason });
    log('WARNING', 'camera failed', { url: this.#url, error: reason, retryInSeconds: this.#retryMs / 1000 });
    this.#retry = setTimeout(() => this.#connect(), this.#retryMs);
    this.#retryMs = Math.min(2 * this.#retryMs, LAST_RETRY_MS);
  }
}

/** Boxes (detect, segment, pose, obb) per class name; other tasks' rows are not detections. */
function detectionsPerClass(results: SummaryRow[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of results) if (row.box) counts[row.name] = (counts[row.name] ?? 0) + 1;
  return counts;
}
