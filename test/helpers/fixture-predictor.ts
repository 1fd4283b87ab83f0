// A Predictor over the trained fixture models (test/helpers/yolo-models.ts) for tests of what is built on predictions:
// the real onnxruntime on the real export, registered per model id, so a test needs no exporting host. The process's
// own Predictor (with its automatic export) is predict-api's; this one stands in for it only where the export itself is
// not under test.
import { decodeImage, InvalidImage, OnnxModel } from '@vp/inference';
import { Invalid } from '../../control-plane/src/http/errors.ts';
import type { ModelRun, Predictor } from '../../control-plane/src/predict/predictor.ts';

const MAX_PIXELS = 50_000_000;

export class FixturePredictor implements Predictor {
  private readonly exports = new Map<string, string>();
  private readonly sessions = new Map<string, Promise<OnnxModel>>();
  /** Runs so far, per model id: a test can tell whether an image reached the model. */
  readonly runs = new Map<string, number>();
  /** Set by a test to hold a run (its number, counting every model's) until the promise resolves: a run in flight. */
  hold: ((run: number) => Promise<void> | undefined) | undefined;
  private total = 0;

  /** The ONNX export that model `modelId` runs. */
  register(modelId: string, onnx: string): void {
    this.exports.set(modelId, onnx);
  }

  async run(
    _em: unknown,
    model: { id: string },
    image: Uint8Array,
    options: Parameters<OnnxModel['predict']>[1],
  ): Promise<ModelRun> {
    const onnx = this.exports.get(model.id);
    if (!onnx) throw new Error(`no export registered for model ${model.id}`);
    let session = this.sessions.get(onnx);
    if (!session) {
      session = OnnxModel.load(onnx, { intraOpThreads: 1 });
      this.sessions.set(onnx, session);
    }
    this.runs.set(model.id, (this.runs.get(model.id) ?? 0) + 1);
    this.total += 1;
    await this.hold?.(this.total);
    const decoded = await decodeImage(image, { maxPixels: MAX_PIXELS }).catch((error: unknown) => {
      throw error instanceof InvalidImage ? Invalid(`image: ${error.message}`) : error;
    });
    const loaded = await session;
    return { prediction: await loaded.predict(decoded, options), info: loaded.info };
  }

  async close(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.allSettled(sessions.map(async (session) => (await session).release()));
  }
}
