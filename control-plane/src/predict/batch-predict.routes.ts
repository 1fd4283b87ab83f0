import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import { BatchDeleted, BatchDeleteQuery, BatchPredictBody, BatchPredictQueued, BatchStatus } from './batch-predict.schemas.ts';
import { ClassMismatch } from './image-predict.schemas.ts';

const PATH = '/api/datasets/:owner/:dataset/predict/batch';

export const startBatchPredict = defineRoute({
  method: 'POST',
  path: PATH,
  tag: 'Datasets',
  summary: "Auto-annotate a dataset's unlabeled images with a model",
  description:
    'Queues a run (202) as a control-plane job (kind batch-predict): it runs where the model sessions are, in this control plane ' +
    'process, durable in PostgreSQL like ingest, resumed by another replica if this one stops. The run first saves a dataset version ' +
    '(or reuses the saved one with the same content), then labels each unlabeled image (with includeAnnotated, every image) as POST ' +
    '/api/images/{imageId}/predict would, saving the predictions through the same checks as PATCH /api/images/{imageId}. Existing labels ' +
    'are never changed or removed: on a labeled image the predictions are added after them. Images with a processing error are skipped. ' +
    'Billing: BATCH_PREDICT_CENTS_PER_IMAGE per image processed; with BILLING_ENFORCED on, the balance must cover every image the run may process (402), and the run ' +
    'is charged only for those it processed, also when cancelled. Errors: 400 operation blur (face blurring is not available yet) or bad ' +
    'classMapping; 409 dataset not ready (or an ingest is running), no images left, or a run in progress; 422 no classes, an incompatible ' +
    'model task, a class mismatch, or a hosted class-prompted or provider model (not available on this appliance; code missing_provider_api_key for provider models).',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: BatchPredictBody },
  documentBody: true,
  response: { status: 202, description: 'Queued', schema: BatchPredictQueued },
  errors: [400, 402, 403, 404, 409, 422],
  errorBodies: { 422: ClassMismatch },
  handler: (ctx, { params, body }) => ctx.state.services.batchPredict.start(ctx.state.actor, params.owner, params.dataset, body),
});

export const batchPredictStatus = defineRoute({
  method: 'GET',
  path: PATH,
  tag: 'Datasets',
  summary: 'The auto-annotation run in flight with its progress, and the last finished run until dismissed',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath },
  response: { status: 200, description: 'The runs', schema: BatchStatus },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.batchPredict.status(ctx.state.actor, params.owner, params.dataset),
});

export const stopBatchPredict = defineRoute({
  method: 'DELETE',
  path: PATH,
  tag: 'Datasets',
  summary: 'Cancel the auto-annotation run in flight, or settle and dismiss the last finished one',
  description:
    'A running run stops after the image in hand; the images it labeled keep their labels and are charged. With no run in flight, the ' +
    'last summary is dismissed after its charge is settled (a run whose process died is charged here). action none: nothing to do.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, query: BatchDeleteQuery },
  response: { status: 200, description: 'What was done', schema: BatchDeleted },
  errors: [403, 404],
  handler: (ctx, { params, query }) => ctx.state.services.batchPredict.stop(ctx.state.actor, params.owner, params.dataset, query.previewJobId),
});

export const batchPredictRoutes = [startBatchPredict, batchPredictStatus, stopBatchPredict];
