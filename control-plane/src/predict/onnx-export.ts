import type { EntityManager } from '@mikro-orm/postgresql';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExportArgs } from '../exports/export-args.ts';
import type { ExportService } from '../exports/export.service.ts';
import { exportById, type ExportRecord } from '../exports/export.store.ts';
import { HttpError, Unavailable } from '../http/errors.ts';
import type { Model } from '../models/model.entity.ts';

const POLL_MS = 500;

/**
 * The size a model was trained at as the platform knows it (trainArgs.imgsz; the larger side of a pair); undefined when
 * it was not told (uploaded weights): then the export takes the checkpoint's own training size, as `yolo export` does,
 * and predict defaults to the size the export was made at.
 */
export function trainingImgsz(model: Pick<Model, 'trainArgs'>): number | undefined {
  const given = model.trainArgs?.imgsz;
  const size = Array.isArray(given) ? Math.max(...given.map(Number)) : Number(given);
  return Number.isInteger(size) && size > 0 ? size : undefined;
}

/** Predict's ONNX export: dynamic (any size at predict time), at the training size rounded up to the exporter's 32. */
export function onnxExportArgs(model: Pick<Model, 'trainArgs'>): ExportArgs {
  const trained = trainingImgsz(model);
  return trained === undefined
    ? { dynamic: true }
    : { dynamic: true, imgsz: Math.min(8192, Math.max(32, Math.ceil(trained / 32) * 32)) };
}

/** Queues (or finds) the model's automatic ONNX export: when it gets weights, and again by predict when it is missing. */
export function queueOnnxExport(exports: ExportService, model: Model): Promise<ExportRecord> {
  return exports.automatic(model, 'onnx', onnxExportArgs(model));
}

/**
 * The blob key of the model's completed ONNX export, waiting up to `waitSeconds` for one queued or running (one is
 * queued when there is none, or the last failed). When no host can make it now (no host connected), an ONNX export of
 * the same weights made earlier with other arguments serves. 503 when it is not there in time, failed, or cannot be made.
 */
export async function completedOnnxExport(
  em: EntityManager,
  exports: ExportService,
  model: Model,
  waitSeconds: number,
): Promise<string> {
  const deadline = Date.now() + waitSeconds * 1000;
  let record: ExportRecord | undefined;
  try {
    record = await queueOnnxExport(exports, model);
  } catch (error) {
    const existing =
      error instanceof HttpError && error.status === 503 ? await exports.completedOfWeights(model, 'onnx') : undefined;
    if (existing) return existing;
    throw error;
  }
  while (record && !['completed', 'failed', 'cancelled'].includes(record.status) && Date.now() < deadline) {
    await sleep(Math.min(POLL_MS, Math.max(0, deadline - Date.now())));
    record = await exportById(em, record.id);
  }
  if (!record) throw Unavailable("The model's ONNX export was deleted while this predict waited for it; try again");
  if (record.status === 'completed' && record.fileKey) return record.fileKey;
  if (record.status === 'failed')
    throw Unavailable(
      `The model's ONNX export failed (${record.error ?? 'no reason recorded'}); the next predict queues it again`,
    );
  if (record.status === 'cancelled')
    throw Unavailable("The model's ONNX export was cancelled; the next predict queues it again");
  throw Unavailable(
    `The model's ONNX export (export ${record.id}, needed for predict) is still ${record.status} after ${waitSeconds} s; try again shortly`,
  );
}
