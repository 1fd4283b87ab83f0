import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import type { PredictOptions } from '@vp/inference';
import { InferenceError, InferencePool, MAX_IMAGE_PIXELS } from '@vp/inference/pool';
import { ExportService } from '../exports/export.service.ts';
import { HttpError, Invalid, NotFound, Unavailable } from '../http/errors.ts';
import { withDecodeMemory } from '../images/image-decode.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import type { ModelRef } from '../models/model-access.ts';
import { Model } from '../models/model.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { completedOnnxExport, onnxExportArgs } from './onnx-export.ts';
import { OnnxFiles, type LocalOnnx } from './onnx-files.ts';
import { predictDecodeMemory } from './predict-decode-memory.ts';
import type { ModelRun, Predictor } from './predictor.ts';

/** Remembered completed exports (model, weights, export args → artifact key); forgotten all at once past this many. */
const MAX_REMEMBERED = 10_000;

export interface OnnxPredictorDeps {
  config: AppConfig;
  storage: Storage;
  lifecycle: JobLifecycle;
}

/** The Predictor of a control plane: the model's automatic ONNX export, as a local file, run in the inference pool. */
export class OnnxPredictor implements Predictor {
  private readonly deps: OnnxPredictorDeps;
  private readonly files: OnnxFiles;
  private readonly pool: InferencePool;
  /** A completed export's artifact never changes: later predicts of the same weights skip the export lookup. */
  private readonly artifacts = new Map<string, string>();

  constructor(deps: OnnxPredictorDeps) {
    const { config, storage } = deps;
    this.deps = deps;
    this.files = new OnnxFiles(storage.store, join(config.dataDir, 'cache', 'onnx'), config.predictDiskCacheBytes);
    // The cores are shared by a workspace's workers' sessions; onnxruntime's threads do the inference's heavy part.
    const intraOpThreads = Math.max(1, Math.floor(availableParallelism() / config.predictWorkers));
    this.pool = new InferencePool({
      workers: config.predictWorkers,
      intraOpThreads,
      // Concurrent requests of a model are split over two sessions with half the threads each (see laneThreads).
      ...(intraOpThreads >= 2 && { laneThreads: Math.floor(intraOpThreads / 2) }),
      cacheBytes: config.predictCacheBytes,
      // onnxruntime-node runs a session synchronously on its worker's thread, so a worker runs one model at a time and
      // spinning only bridges the gaps between that run's operators: yolo11n at 640 px on 2 cores measured 34 ms of
      // inference spinning, 40 ms asleep, with 4 concurrent clients no slower.
      spinning: true,
    });
  }

  async run(em: EntityManager, model: ModelRef, image: Uint8Array, options: PredictOptions): Promise<ModelRun> {
    // Refused from its header before anything waits for the model; the run holds its share of the process's decoding memory.
    const decodeMemory = await predictDecodeMemory(image);
    const remembered = `${model.id}\0${model.fileKey}\0${JSON.stringify(onnxExportArgs(model))}`;
    const cached = this.artifacts.get(remembered);
    // The remembered artifact may be gone (its export deleted): then the exports are asked again.
    const artifact =
      (cached !== undefined &&
        (await this.files.local(cached).then(
          (local) => ({ key: cached, ...local }),
          () => undefined,
        ))) ||
      (await this.lookUp(em, model, remembered));
    try {
      // Each workspace's models run in processes of its own: a hostile export stalls only its own workspace.
      return await withDecodeMemory(decodeMemory, () =>
        this.pool.run({ ...artifact, partition: model.workspace.id }, image, options, MAX_IMAGE_PIXELS),
      );
    } catch (error) {
      if (!(error instanceof InferenceError)) throw error;
      if (error.kind === 'image') throw Invalid(`The input is not an image this server can read: ${error.message}`);
      if (error.kind === 'model') throw new HttpError(422, `The model's ONNX export cannot be run: ${error.message}`);
      throw error;
    }
  }

  /** The model's completed ONNX export (waited for, queued when missing) as a local file; remembered. */
  private async lookUp(em: EntityManager, ref: ModelRef, remembered: string): Promise<{ key: string } & LocalOnnx> {
    // The entity (from the identity map when the caller loaded it) is needed only here, to find or queue the export.
    const model = await em.findOne(Model, { id: ref.id, deletedAt: null });
    if (!model) throw NotFound('The model was deleted');
    const exports = new ExportService(em, this.deps);
    const key = await completedOnnxExport(em, exports, model, this.deps.config.predictExportWaitSeconds);
    const local = await this.files.local(key).catch((error: Error) => {
      throw Unavailable(
        `The model's ONNX export cannot be read from storage (${error.message}); delete the export so that the next predict makes it again`,
      );
    });
    if (this.artifacts.size >= MAX_REMEMBERED) this.artifacts.clear();
    this.artifacts.set(remembered, key);
    return { key, ...local };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
