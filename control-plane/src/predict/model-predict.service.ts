import type { IncomingMessage } from 'node:http';
import type { EntityManager } from '@mikro-orm/postgresql';
// Subpaths: the package's index loads onnxruntime, which only the inference workers need.
import { predictResponse, readPredictInput, type ByteBound, type UrlFetcher } from '@vp/inference/request';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { Conflict } from '../http/errors.ts';
import { findModelRef } from '../models/model-access.ts';
import type { OutboundPolicy } from '../net/guarded-fetch.ts';
import type { PredictResponse } from './model-predict.schemas.ts';
import { trainingImgsz } from './onnx-export.ts';
import { sourceFetcher } from './predict-source-fetch.ts';
import type { Predictor } from './predictor.ts';

type Address = { owner: string; project: string; model: string };

/** POST /api/models/{owner}/{project}/{model}/predict: one image through the model's ONNX export. */
export class ModelPredictService {
  private readonly em: EntityManager;
  private readonly predictor: Predictor;
  private readonly bound: ByteBound;
  private readonly fetchSource: UrlFetcher;

  constructor(em: EntityManager, predictor: Predictor, options: { outbound: OutboundPolicy; maxBytes: number }) {
    this.em = em;
    this.predictor = predictor;
    this.bound = { maxBytes: options.maxBytes, setting: 'PREDICT_MAX_BYTES' };
    this.fetchSource = sourceFetcher(options.outbound, this.bound);
  }

  /** The request body is read once the caller may predict with the model, so a refused request costs no upload. */
  async predict(actor: Actor, at: Address, request: IncomingMessage): Promise<z.input<typeof PredictResponse>> {
    const startedAt = performance.now();
    // Public models: anyone (anonymous included); another workspace's private model: 404.
    const model = await findModelRef(this.em, actor, at.owner, at.project, at.model, 'view');
    if (!model.fileKey)
      throw Conflict(
        `Model ${at.owner}/${at.project}/${at.model} has no weights yet: train it or upload its weights first`,
      );
    const { parameters, image } = await readPredictInput(request, this.bound, this.fetchSource);
    const run = await this.predictor.run(this.em, model, image, {
      conf: parameters.conf,
      iou: parameters.iou,
      imgsz: parameters.imgsz ?? trainingImgsz(model),
    });
    return predictResponse(run, parameters, { model: `${at.owner}/${at.project}/${at.model}`, startedAt });
  }
}
