// POST /api/models/{owner}/{project}/{model}/predict
import { defineRoute } from '../http/define-route.ts';
import { ModelPath } from '../models/model.schemas.ts';
import { PredictForm, PredictResponse } from './model-predict.schemas.ts';

export const predictModel = defineRoute({
  method: 'POST',
  path: '/api/models/:owner/:project/:model/predict',
  tag: 'Models',
  summary: 'Run the model on one image',
  description:
    'multipart/form-data with file (or a urlencoded or JSON body with source: an http(s) image URL fetched by the server through its outbound ' +
    'policy, public addresses only unless OUTBOUND_ALLOWED_NETWORKS allows them, a data: URI, or base64). Parameters and ranges as in the spec ' +
    '(out of range: 400 naming the field); imgsz defaults to the size the model was trained at (trainArgs.imgsz, else the size its weights were trained at, read by the export). An image larger than PREDICT_MAX_BYTES ' +
    '(uploaded, fetched or decoded) is 413, and so is a JSON or urlencoded body over 64 KiB (it holds only the parameters and a source of at ' +
    'most 4,096 characters; a larger image comes as a multipart file), refused before it is read; a form of more than 16 parts is 400 as ' +
    'it arrives. An image whose decoding would take more ' +
    'than 128 MiB, from what its header says (about 24 megapixels of baseline JPEG or PNG, fewer when progressive, interlaced or 16-bit), is ' +
    '413 before it is decoded; bytes that are not a whole image (truncated, unknown format) are 400. ' +
    'Video is not supported on this appliance: a video file is 400 (send frames as images); vid_stride is accepted and ignored. ' +
    'The model runs as its ONNX export with onnxruntime: the platform queues that export itself (format onnx, dynamic true, imgsz the training ' +
    'size: trainArgs.imgsz, else left to the checkpoint, as yolo export does) when the model gets weights (upload completed, training completed, clone) and it shows in the model’s exports list. A predict ' +
    'before it is completed queues it if needed and waits up to PREDICT_EXPORT_WAIT_SECONDS, then 503; 503 also names why no host can export ' +
    'to onnx, or says that the export failed (the next predict queues it again). A model without weights is 409. An export that cannot be run ' +
    '(metadata out of bounds, inputs or outputs no YOLO export has, a run that fails or passes its worker’s memory bound) is 422 saying why. Public models can be predicted ' +
    'anonymously and with any key (counted against the caller, Predict category); another workspace’s private model is 404.',
  auth: 'optional',
  limit: 'predict',
  request: { params: ModelPath },
  streamedBody: {
    contentType: 'multipart/form-data',
    description: 'The image and the parameters',
    schema: PredictForm,
  },
  response: { status: 200, description: 'The predictions', schema: PredictResponse },
  errors: [400, 404, 409, 413, 422, 503],
  handler: (ctx, { params }) => ctx.state.services.modelPredict.predict(ctx.state.actor, params, ctx.req),
});

export const modelPredictRoutes = [predictModel];
