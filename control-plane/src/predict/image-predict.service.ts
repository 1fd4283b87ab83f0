import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { checkDatasetAccess } from '../datasets/dataset-access.ts';
import { HttpError, NotFound } from '../http/errors.ts';
import { Image } from '../images/image.entity.ts';
import type { Storage } from '../storage/storage.ts';
import { bytesRefOf } from '../images/image-bytes.ts';
import { annotateImage, prepareAnnotation, type AnnotateRequest } from './auto-annotate.ts';
import type { ImagePredicted } from './image-predict.schemas.ts';
import type { Predictor } from './predictor.ts';
import { refuseConnected } from '../datasets/connected-storage.ts';

/** Auto-annotation of one image: the model's predictions as the dataset's labels, returned, never saved. */
export class ImagePredictService {
  private readonly em: EntityManager;
  private readonly storage: Storage;
  private readonly predictor: Predictor;

  constructor(em: EntityManager, storage: Storage, predictor: Predictor) {
    this.em = em;
    this.storage = storage;
    this.predictor = predictor;
  }

  async predict(actor: Actor, imageId: string, request: AnnotateRequest): Promise<z.input<typeof ImagePredicted>> {
    const image = await this.em.findOne(Image, imageId, { populate: ['dataset', 'dataset.workspace'] });
    try {
      checkDatasetAccess(actor, image?.dataset ?? null, 'view', '');
    } catch (error) {
      // An image of a dataset the key cannot see does not exist for it (another workspace's included).
      if (error instanceof HttpError && error.status === 404) throw NotFound(`Image ${imageId} not found`);
      throw error;
    }
    const { dataset } = image!;
    refuseConnected(
      dataset,
      'auto-annotating its images is not available; label them in a dataset of their own (adopt copies them)',
    );
    const annotation = await prepareAnnotation(this.em, actor, dataset, request);
    const predicted = await annotateImage(this.em, this.predictor, this.storage, annotation, {
      ...bytesRefOf(image!, dataset.workspace.id),
      channels: image!.channels,
      error: image!.error,
    });
    return {
      success: true,
      predictions: predicted.labels,
      confidences: predicted.confidences,
      modelUsed: request.modelId,
      inferenceTime: Math.round(predicted.milliseconds * 10) / 10,
    };
  }
}
