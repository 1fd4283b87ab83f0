import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/actor.ts';
import { checkDatasetAccess, type DatasetNeed } from '../datasets/dataset-access.ts';
import type { Dataset } from '../datasets/dataset.entity.ts';
import { HttpError, NotFound } from '../http/errors.ts';
import { Image } from './image.entity.ts';

/** The image and its dataset, if the actor has the access; an image of a dataset it cannot view is 404. */
export async function findImage(
  em: EntityManager,
  actor: Actor,
  imageId: string,
  need: DatasetNeed,
): Promise<{ image: Image; dataset: Dataset }> {
  const image = await em.findOne(Image, imageId, { populate: ['dataset', 'dataset.workspace'] });
  try {
    const { dataset } = checkDatasetAccess(actor, image?.dataset ?? null, need, '');
    return { image: image as Image, dataset };
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) throw NotFound(`Image ${imageId} not found`);
    throw error;
  }
}
