import type { EntityManager } from '@mikro-orm/postgresql';
import type { ExportService } from '../exports/export.service.ts';
import { HttpError } from '../http/errors.ts';
import { Model } from '../models/model.entity.ts';
import { queueOnnxExport } from './onnx-export.ts';

/** Told once models have new weights (an upload completed, a training completed, a clone made), after the commit. */
export type WeightsArrived = (modelIds: string[]) => Promise<void>;

/** Queues each model's automatic ONNX export, so that its first predict finds it done (a clone reuses its source's). */
export function queueOnnxOnWeights(em: EntityManager, exports: () => ExportService): WeightsArrived {
  return async (modelIds) => {
    for (const id of modelIds) {
      const model = await em.findOne(Model, { id, deletedAt: null }, { populate: ['workspace'], refresh: true });
      if (!model?.fileKey) continue;
      // Best effort (no host can export yet, say): the upload or training succeeded, and predict queues it again.
      await queueOnnxExport(exports(), model).catch((error: unknown) => {
        if (!(error instanceof HttpError)) throw error;
      });
    }
  };
}
