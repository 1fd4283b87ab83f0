import type { EntityManager } from '@mikro-orm/postgresql';
import { Handle, Slug } from '../account/handle.ts';
import type { Actor } from '../auth/actor.ts';
import { findDataset } from '../datasets/dataset-access.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { Invalid } from '../http/errors.ts';
import { findModel } from './model-access.ts';
import type { Model } from './model.entity.ts';

const REFERENCE = /^ul:\/\/([^/]+)\/([^/]+)\/([^/]+)$/;
const MODEL_SHAPE = 'ul://{owner}/{project}/{model}';
const DATASET_SHAPE = 'ul://{owner}/datasets/{dataset}';

/** The three names of a reference URI, each checked against the URL-name rules; else 400 naming the expected shape. */
function parseReference(uri: string, shape: string): [owner: string, middle: string, slug: string] {
  const match = REFERENCE.exec(uri);
  if (
    !match ||
    !Handle.safeParse(match[1]).success ||
    !Slug.safeParse(match[2]).success ||
    !Slug.safeParse(match[3]).success
  ) {
    throw Invalid(`"${uri.slice(0, 300)}" is not a reference of the shape ${shape}`);
  }
  return [match[1], match[2], match[3]];
}

/** `ul://{owner}/{project}/{model}`: the model, when the actor may view it (else 404, like its URL). */
export async function resolveModelReference(em: EntityManager, actor: Actor, uri: string): Promise<Model> {
  const [owner, project, model] = parseReference(uri, MODEL_SHAPE);
  return (await findModel(em, actor, owner, project, model, 'view')).model;
}

/** `ul://{owner}/datasets/{dataset}`: the dataset, when the actor may view it (else 404, like its URL). */
export async function resolveDatasetReference(em: EntityManager, actor: Actor, uri: string): Promise<Dataset> {
  const [owner, kind, dataset] = parseReference(uri, DATASET_SHAPE);
  if (kind !== 'datasets') throw Invalid(`"${uri.slice(0, 300)}" is not a reference of the shape ${DATASET_SHAPE}`);
  return (await findDataset(em, actor, owner, dataset, 'view')).dataset;
}
