import type { IncomingMessage } from 'node:http';
import type { EntityManager } from '@mikro-orm/postgresql';
// The subpath: the package's index loads onnxruntime, which only the inference workers need.
import { summarize } from '@vp/inference/summary';
import type { z } from 'zod';
import type { Actor } from '../auth/actor.ts';
import { describeZodError } from '../http/error-middleware.ts';
import { Conflict, HttpError, Invalid } from '../http/errors.ts';
import { findModelRef } from '../models/model-access.ts';
import type { OutboundPolicy } from '../net/outbound-policy.ts';
import { denseOutputs } from './dense-outputs.ts';
import { PredictParameters, type PredictResponse } from './model-predict.schemas.ts';
import { trainingImgsz } from './onnx-export.ts';
import { isVideo, readPredictBody, sourceBytes } from './predict-input.ts';
import type { Predictor } from './predictor.ts';

type Address = { owner: string; project: string; model: string };

const VIDEO_REFUSED =
  'Video input is not supported by this appliance: send one image (JPEG, PNG, WebP, BMP, TIFF, …) per request, or frames extracted from the video';

/** POST /api/models/{owner}/{project}/{model}/predict: one image through the model's ONNX export. */
export class ModelPredictService {
  private readonly em: EntityManager;
  private readonly predictor: Predictor;
  private readonly outbound: OutboundPolicy;
  private readonly maxBytes: number;

  constructor(em: EntityManager, predictor: Predictor, options: { outbound: OutboundPolicy; maxBytes: number }) {
    this.em = em;
    this.predictor = predictor;
    this.outbound = options.outbound;
    this.maxBytes = options.maxBytes;
  }

  /** The request body is read once the caller may predict with the model, so a refused request costs no upload. */
  async predict(actor: Actor, at: Address, request: IncomingMessage): Promise<z.input<typeof PredictResponse>> {
    const started = performance.now();
    // Public models: anyone (anonymous included); another workspace's private model: 404.
    const model = await findModelRef(this.em, actor, at.owner, at.project, at.model, 'view');
    if (!model.fileKey) throw Conflict(`Model ${at.owner}/${at.project}/${at.model} has no weights yet: train it or upload its weights first`);
    const body = await readPredictBody(request, this.maxBytes);
    const parsed = PredictParameters.safeParse(body.fields);
    if (!parsed.success) throw new HttpError(400, describeZodError(parsed.error, 'body'));
    const parameters = parsed.data;
    if (body.file && parameters.source !== undefined) throw Invalid('Send file or source, not both');
    if (!body.file && parameters.source === undefined) throw Invalid('Send the image as file (multipart/form-data) or source (URL or base64)');
    const image = body.file ? body.file.bytes : await sourceBytes(parameters.source!, this.outbound, this.maxBytes);
    if (isVideo(image, body.file?.type)) throw Invalid(VIDEO_REFUSED);

    const { prediction, info } = await this.predictor.run(this.em, model, image, {
      conf: parameters.conf,
      iou: parameters.iou,
      imgsz: parameters.imgsz ?? trainingImgsz(model),
    });
    const results = summarize(prediction, info.names, { normalize: parameters.normalize, decimals: parameters.decimals });
    return {
      images: [{ shape: prediction.shape, speed: prediction.speed, results, ...(await denseOutputs(prediction, parameters.bits)) }],
      metadata: {
        imageCount: 1,
        classNames: info.names,
        functionTimeAlive: process.uptime(),
        functionTimeCall: (performance.now() - started) / 1000,
        model: `${at.owner}/${at.project}/${at.model}`,
        task: info.task,
        version: { runtime: 'onnxruntime-node', node: process.versions.node },
      },
    };
  }
}
