// The server's one camera (SERVICE_ROUTES.camera): off, or one CameraSession. Changes run one after the other, each
// once the previous session's ffmpeg has exited, so two PUTs at once never leave two streams running.
import type { CameraState } from '../contract.ts';
import type { ServedModel } from '../served-model.ts';
import { CameraSession } from './camera-session.ts';
import type { CameraConfig } from './camera-settings.ts';

/** A camera set while the server stops. */
export class CameraClosed extends Error {}

const OFF: CameraState = { url: null, state: 'off', framesRead: 0, framesPredicted: 0, framesDropped: 0, counts: {} };

export class Camera {
  readonly #ffmpeg: string;
  readonly #model: ServedModel;
  #session: CameraSession | undefined;
  #changes: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(ffmpeg: string, model: ServedModel) {
    this.#ffmpeg = ffmpeg;
    this.#model = model;
  }

  get state(): CameraState {
    return this.#session?.state ?? structuredClone(OFF);
  }

  /** Starts reading the camera, replacing the one before; rejects with CameraClosed once the server stops. */
  set(config: CameraConfig): Promise<CameraState> {
    return this.#change(() => {
      if (this.#closed) throw new CameraClosed('the server is stopping');
      return new CameraSession(config, this.#ffmpeg, this.#model);
    });
  }

  stop(): Promise<CameraState> {
    return this.#change(() => undefined);
  }

  /** Stops the camera for good: the server is stopping. */
  close(): Promise<CameraState> {
    this.#closed = true;
    return this.stop();
  }

  #change(openNext: () => CameraSession | undefined): Promise<CameraState> {
    const changed = this.#changes.then(async () => {
      const stopping = this.#session;
      this.#session = undefined;
      await stopping?.stop();
      this.#session = openNext();
      return this.state;
    });
    this.#changes = changed.catch(() => undefined);
    return changed;
  }
}
