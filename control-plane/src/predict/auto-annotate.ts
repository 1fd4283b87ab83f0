import { buffer } from 'node:stream/consumers';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ModelInfo, PredictOptions } from '@vp/inference';
import { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { requireAccess } from '../auth/resource-access.ts';
import { ClassId } from '../datasets/class.schemas.ts';
import { MAX_CLASS_NAMES } from '../datasets/dataset.schemas.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { ID_PATTERN } from '../db/ids.ts';
import { Conflict, HttpError, Invalid, NotFound } from '../http/errors.ts';
import { openImageBytes, type ImageBytesRef } from '../images/image-bytes.ts';
import { Model } from '../models/model.entity.ts';
import { resolveModelReference } from '../models/references.ts';
import type { Storage } from '../storage/storage.ts';
import { resolveClassMap } from './class-map.ts';
import { trainingImgsz } from './onnx-export.ts';
import { labelingMismatch, predictionLabels, type LabelTarget, type PredictedLabels } from './prediction-labels.ts';
import type { Predictor } from './predictor.ts';

/** Hosted class-prompted models: they run on the hosted service's GPUs, which an on-premise appliance does not reach. */
export const CLASS_PROMPTED_MODELS = [
  'qwen',
  'gemma',
  'nemotron',
  'moondream',
  'florence2',
  'owlv2',
  'yoloe26x',
  'sam3',
  'sam3.1',
  'groundingdino',
] as const;
/** Paid provider models: called with a provider key saved in the workspace, which this appliance has no place for. */
export const PROVIDER_MODELS = [
  'gpt-6-astra',
  'gpt-6.1-sol',
  'claude-fable-5-1',
  'claude-opus-5-5',
  'claude-sonnet-5-5',
  'gemini-4-argon',
  'grok-4.7',
  'kimi-k3',
  'kimi-k3.1-pro',
  'muse-wonder-1.0',
  'muse-spark-1.3',
  'mimo-v2.6-pro',
  'qwen3.8-max',
  'gpt-6-luna',
  'claude-haiku-5-5',
  'gemini-3.8-flash',
  'gemini-3.5-flash-lite',
  'glm-5.3-flash',
  'deepseek-flash',
  'mimo-v2.6-flash',
  'minimax-m3.1-flash',
] as const;
/** Spec: class-prompted models need a detection dataset with 1-200 classes. */
const PROMPTED_MAX_CLASSES = 200;
const MAX_CHANNELS = 3;

/** The request fields single-image and batch auto-annotation share. */
export const AnnotateFields = {
  modelId: z
    .string()
    .min(1)
    .max(300)
    .meta({
      description:
        'A model of this appliance: ul://owner/project/model or its 24-character id (own models and public ones). ' +
        `Hosted class-prompted models (${CLASS_PROMPTED_MODELS.join(', ')}) and paid provider models (${PROVIDER_MODELS.join(', ')}) ` +
        'are named by the hosted API but not available on this on-premise appliance: 422',
      examples: ['ul://alice/vision/detector'],
    }),
  confidence: z.number().min(0.01).max(1).default(0.25).meta({ description: 'Minimum confidence, 0.01-1' }),
  iou: z.number().min(0).max(0.95).default(0.7).meta({ description: 'NMS IoU threshold, 0-0.95' }),
  classMapping: z
    .array(ClassId.nullable())
    .max(MAX_CLASS_NAMES)
    .nullable()
    .optional()
    .meta({
      description:
        'Dataset class index per model class, in order, or null to drop that class; a wrong length or an index out of range is 400. ' +
        'Without it, model classes match dataset classes by name (case ignored beyond 2 characters); a model class with no match is 422 (unmatchedClasses)',
    }),
};

export interface AnnotateRequest {
  modelId: string;
  confidence: number;
  iou: number;
  classMapping?: Array<number | null> | null;
}

/** Everything a run needs, checked before any image is read. */
export interface Annotation {
  model: Model;
  target: LabelTarget;
  options: PredictOptions;
  classMapping: Array<number | null> | null | undefined;
  datasetClasses: string[];
  /** From the model's recorded class names when known; else from its export, at the first run (classMapFor). */
  classMap: Array<number | null> | null;
}

/**
 * Checks that a dataset can be auto-annotated with the requested model, in the order the spec answers: a depth dataset
 * is 400; a hosted class-prompted or provider model is 422 (on a non-detection dataset or outside 1-200 classes as the
 * hosted API says; otherwise because this appliance cannot reach it, missing_provider_api_key for provider models);
 * then the model must be visible to the actor (404), have weights (409) and a task that fits the dataset (422); then
 * the class mapping (400, or 422 for a class mismatch).
 */
export async function prepareAnnotation(
  em: EntityManager,
  actor: Actor,
  dataset: Dataset,
  request: AnnotateRequest,
): Promise<Annotation> {
  if (dataset.task === 'depth')
    throw Invalid('Depth datasets cannot be auto-annotated: depth maps do not convert to labels');
  const hosted = (CLASS_PROMPTED_MODELS as readonly string[]).includes(request.modelId);
  const provider = (PROVIDER_MODELS as readonly string[]).includes(request.modelId);
  if (hosted || provider) {
    const classes = dataset.classNames.length;
    if (dataset.task !== 'detect')
      throw new HttpError(
        422,
        `Class-prompted model ${request.modelId} labels detection datasets only; this dataset is ${dataset.task}`,
      );
    if (classes < 1 || classes > PROMPTED_MAX_CLASSES)
      throw new HttpError(
        422,
        `Class-prompted model ${request.modelId} needs a dataset with 1-${PROMPTED_MAX_CLASSES} classes; this one has ${classes}`,
      );
    if (provider) {
      throw new HttpError(
        422,
        `Provider model ${request.modelId} needs a provider API key, and this on-premise appliance stores none (it calls no external provider); use a model of this appliance (ul://owner/project/model)`,
        {
          code: 'missing_provider_api_key',
        },
      );
    }
    throw new HttpError(
      422,
      `Class-prompted model ${request.modelId} runs only on the hosted service, which this on-premise appliance does not reach; use a model of this appliance (ul://owner/project/model)`,
    );
  }
  const model = await findModel(em, actor, request.modelId);
  if (!model.fileKey) throw Conflict(`Model ${request.modelId} has no weights yet; upload or train them first`);
  const mismatch = labelingMismatch({ task: dataset.task, kptShape: dataset.kptShape ?? null }, { task: model.task });
  if (mismatch) throw new HttpError(422, mismatch);
  const classMap = model.classNames?.length
    ? resolveClassMap(dataset.classNames, model.classNames, request.classMapping)
    : null;
  return annotationOf(model, dataset, request, classMap);
}

/** A run's settings: the request's, the dataset's label format, the model's training size (as the model predict route). */
export function annotationOf(
  model: Model,
  dataset: Dataset,
  request: AnnotateRequest,
  classMap: Array<number | null> | null,
): Annotation {
  return {
    model,
    target: { task: dataset.task, kptShape: dataset.kptShape ?? null },
    options: { conf: request.confidence, iou: request.iou, imgsz: trainingImgsz(model) },
    classMapping: request.classMapping,
    datasetClasses: dataset.classNames,
    classMap,
  };
}

/** A model by reference URI or id, when the actor may view it (its project's rule); 404 otherwise. */
async function findModel(em: EntityManager, actor: Actor, modelId: string): Promise<Model> {
  if (modelId.startsWith('ul://')) return resolveModelReference(em, actor, modelId);
  if (!ID_PATTERN.test(modelId))
    throw Invalid(`modelId: "${modelId.slice(0, 100)}" is neither ul://owner/project/model nor a model id`);
  const model = await em.findOne(
    Model,
    { id: modelId, deletedAt: null, project: { deletedAt: null } },
    { populate: ['workspace', 'project'] },
  );
  requireAccess(actor, model?.project ?? null, 'view', `Model ${modelId} not found`);
  return model!;
}

/** The class map of a run, from the export's names when the model recorded none; the export's task and keypoints are checked too. */
export function classMapFor(annotation: Annotation, info: ModelInfo): Array<number | null> {
  const mismatch = labelingMismatch(annotation.target, info);
  if (mismatch) throw new HttpError(422, mismatch);
  annotation.classMap ??= resolveClassMap(annotation.datasetClasses, info.names, annotation.classMapping);
  return annotation.classMap;
}

/** One image through the model, its prediction as labels of the dataset (unsaved). */
export async function annotateImage(
  em: EntityManager,
  predictor: Predictor,
  storage: Storage,
  annotation: Annotation,
  image: ImageBytesRef & { channels: number; error?: string | null },
): Promise<PredictedLabels & { milliseconds: number }> {
  if (image.channels > MAX_CHANNELS)
    throw Conflict(`The image has ${image.channels} channels; auto-annotation takes at most ${MAX_CHANNELS}`);
  const read = await openImageBytes(storage, image);
  if (!read) throw NotFound('The image file is missing from storage');
  const bytes = await buffer(read);
  const { prediction, info } = await predictor.run(em, annotation.model, bytes, annotation.options);
  const classMap = classMapFor(annotation, info);
  const { speed } = prediction;
  return {
    ...predictionLabels(prediction, annotation.target, classMap),
    milliseconds: speed.preprocess + speed.inference + speed.postprocess,
  };
}
