import type { z } from 'zod';
import type { Model } from './model.entity.ts';
import type { ModelDetail, ModelSummary } from './model.schemas.ts';

const DEFAULT_WEIGHTS_EXT = '.pt';

/** The download name of the weights: `<model>` plus the uploaded file's extension (`.pt` when it had none). */
export function weightsName(model: Model): string {
  const uploaded = model.fileKey?.split('/').pop() ?? '';
  const ext = /\.[a-z0-9]{1,16}$/i.exec(uploaded)?.[0].toLowerCase() ?? DEFAULT_WEIGHTS_EXT;
  return model.slug + ext;
}

export function modelSummary(model: Model): z.input<typeof ModelSummary> {
  return {
    id: model.id,
    model: model.slug,
    name: model.name,
    task: model.task,
    status: model.status,
    metrics: model.metrics ?? null,
    epochs: model.epochs ?? null,
    bestEpoch: model.bestEpoch ?? null,
    weights: model.fileKey ? { name: weightsName(model), size: model.fileBytes ?? 0 } : null,
    trainArgs: model.trainArgs ?? null,
    createdAt: model.createdAt.toISOString(),
    completedAt: model.completedAt?.toISOString() ?? null,
    updatedAt: model.updatedAt.toISOString(),
  };
}

export function modelDetail(model: Model, owner: string, starred: boolean): z.input<typeof ModelDetail> {
  return {
    ...modelSummary(model),
    owner,
    project: model.project.slug,
    description: model.description,
    metadata: model.metadata,
    trainResults: model.trainResults ?? null,
    classNames: model.classNames ?? null,
    computeCost: model.computeCost ?? null,
    // double columns may come back from the driver as strings.
    bestFitness: model.bestFitness == null ? null : Number(model.bestFitness),
    version: model.version ?? null,
    color: model.color ?? null,
    license: model.license ?? null,
    datasetSlug: model.datasetSlug ?? null,
    trainingError: model.trainingError ?? null,
    starCount: model.starCount,
    starred,
    startedAt: model.startedAt?.toISOString() ?? null,
  };
}
