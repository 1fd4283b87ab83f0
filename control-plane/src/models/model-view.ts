import type { z } from 'zod';
import type { Model } from './model.entity.ts';
import type { ModelDetail, ModelEntry, ModelListItem, MODEL_STATUSES } from './model.schemas.ts';

const DEFAULT_WEIGHTS_EXT = '.pt';

/** The download name of the weights: `<model>` plus the uploaded file's extension (`.pt` when it had none). */
export function weightsName(model: Model): string {
  const uploaded = model.fileKey?.split('/').pop() ?? '';
  const ext = /\.[a-z0-9]{1,16}$/i.exec(uploaded)?.[0].toLowerCase() ?? DEFAULT_WEIGHTS_EXT;
  return model.slug + ext;
}

/** The record's `training` (queued, starting or running) is what clients call running. */
const viewStatus = (status: string) => (status === 'training' ? 'running' : status) as (typeof MODEL_STATUSES)[number];

/** `{ [key]: value }` when there is a value, else nothing: optional fields are absent, not null. */
const present = <K extends string, V>(key: K, value: V | null | undefined) =>
  value === null || value === undefined ? {} : ({ [key]: value } as Record<K, V>);
const iso = (date: Date | null | undefined) => date?.toISOString();

export function modelEntry(model: Model): z.input<typeof ModelEntry> {
  return {
    id: model.id,
    model: model.slug,
    name: model.name,
    task: model.task,
    status: viewStatus(model.status),
    ...present('color', model.color),
    ...present('metrics', model.metrics),
    ...present('epochs', model.epochs),
    ...present('bestEpoch', model.bestEpoch),
    // double columns may come back from the driver as strings.
    ...present('bestFitness', model.bestFitness == null ? null : Number(model.bestFitness)),
    weights: model.fileKey ? { name: weightsName(model), size: model.fileBytes ?? 0 } : null,
    hasWeights: Boolean(model.fileKey),
    ...present('file', model.fileKey ? { size: model.fileBytes ?? 0 } : null),
    ...present('trainArgs', model.trainArgs),
    ...present('startedAt', iso(model.startedAt)),
    ...present('completedAt', iso(model.completedAt)),
    createdAt: model.createdAt.toISOString(),
    updatedAt: model.updatedAt.toISOString(),
  };
}

/** A model as listed; `model.project` must be loaded (its name and visibility are the model's too). */
export function modelListItem(model: Model, owner: string, starred: boolean): z.input<typeof ModelListItem> {
  return {
    ...modelEntry(model),
    owner,
    project: model.project.slug,
    projectName: model.project.name,
    visibility: model.project.visibility,
    description: model.description,
    ...present('license', model.license),
    ...present('version', model.version),
    datasetSlug: model.datasetSlug ?? null,
    ...present('datasetId', model.dataset?.id),
    ...present('trainResults', model.trainResults),
    ...present('classNames', model.classNames),
    // The message is stored; it dates from the training's end.
    ...present(
      'trainingError',
      model.trainingError
        ? { message: model.trainingError, timestamp: (model.completedAt ?? model.updatedAt).toISOString() }
        : null,
    ),
    ...present('computeCost', model.computeCost),
    starCount: model.starCount,
    isStarred: starred,
    starred,
  };
}

/** A model read; `model.dataset` is linked only while its dataset exists (it may need loading for its handle). */
export function modelDetail(
  model: Model,
  owner: string,
  starred: boolean,
  dataset: { owner: string; dataset: string } | null,
): z.input<typeof ModelDetail> {
  return {
    ...modelListItem(model, owner, starred),
    metadata: model.metadata,
    ...present('plots', model.plots),
    ...present('dataset', dataset),
  };
}
