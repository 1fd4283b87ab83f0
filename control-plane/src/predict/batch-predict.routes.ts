import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import {
  BatchDeleted,
  BatchDeleteQuery,
  BatchPredictBody,
  BatchPredictQueued,
  BatchStatus,
} from './batch-predict.schemas.ts';
import { ClassMismatch } from './image-predict.schemas.ts';

const PATH = '/api/datasets/:owner/:dataset/predict/batch';

export const startBatchPredict = defineRoute({
  method: 'POST',
  path: PATH,
  tag: 'Datasets',
  summary: "Auto-annotate a dataset's unlabeled images with a model, or blur the faces in its images",
  description:
    'Queues a run (202) as a control-plane job (kind batch-predict): it runs where the model sessions are, in this control plane ' +
    'process, durable in PostgreSQL like ingest, resumed by another replica if this one stops. The run first saves a dataset version ' +
    '(or reuses the saved one with the same content), then labels each unlabeled image (with includeAnnotated, every image) as POST ' +
    '/api/images/{imageId}/predict would, saving the predictions through the same checks as PATCH /api/images/{imageId}. Existing labels ' +
    'are never changed or removed: on a labeled image the predictions are added after them. Images with a processing error are skipped. ' +
    'Billing: BATCH_PREDICT_CENTS_PER_IMAGE per image processed; with BILLING_ENFORCED on, the balance must cover every image the run may process (402), and the run ' +
    'is charged only for those it processed, also when cancelled. ' +
    'operation blur: blurs the faces the face detector finds (score over confidence, boxes scaled by boxScale around their centres) in ' +
    "the dataset's stored images, or in the one imageId names, the way blurFaces does: an image with faces gets new bytes and thumbnail " +
    '(a new hash), its originals are deleted when nothing else uses them; labels are never changed and no version is saved. preview: ' +
    'blurs up to six images into previews without changing any (GET on this path shows them with their URLs and faces per image); ' +
    'previewJobId: applies that finished preview with the same settings (its images get exactly the files it showed; the others are ' +
    "blurred as it would have); DELETE with previewJobId discards it. Face blur is free (it runs on the control plane's CPU, like " +
    'blurring on ingest): no credit needed, nothing charged. ' +
    'Errors: 400 bad classMapping, boxScale outside 0.5-1.5, preview with previewJobId, or a preview applied with other settings; 404 imageId ' +
    'or previewJobId not in this dataset; 409 dataset not ready (or an ingest is running), no images left, a run in progress, a connected ' +
    'dataset (blur), or a preview unfinished, applied already or discarded; 422 no classes, an incompatible model task, a class mismatch, ' +
    'or a hosted class-prompted or provider model (not available on this appliance; code missing_provider_api_key for provider models); ' +
    '503 no face detector installed (blur).',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, body: BatchPredictBody },
  documentBody: true,
  response: { status: 202, description: 'Queued', schema: BatchPredictQueued },
  errors: [400, 402, 403, 404, 409, 422, 503],
  errorBodies: { 422: ClassMismatch },
  handler: (ctx, { params, body }) =>
    ctx.state.services.batchPredict.start(ctx.state.actor, params.owner, params.dataset, body),
});

export const batchPredictStatus = defineRoute({
  method: 'GET',
  path: PATH,
  tag: 'Datasets',
  summary:
    'The auto-annotation or face blur run in flight with its progress, and the last finished run until dismissed',
  description:
    'A face blur preview lists its images (previews: imageId, imageUrl, thumbnailUrl, faces) while it runs and after, until applied or discarded.',
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
  summary: 'Cancel the run in flight, or settle and dismiss the last finished one; or discard a face blur preview',
  description:
    'A running run stops after the image in hand; the images it labeled keep their labels and are charged. With no run in flight, the ' +
    'last summary is dismissed after its charge is settled (a run whose process died is charged here). action none: nothing to do. ' +
    'With previewJobId: that face blur preview is cancelled if running, else discarded (dismissed, its prepared images deleted): 404 not ' +
    'a preview of this dataset, 409 applied already; none if discarded before.',
  auth: 'key',
  limit: 'default',
  request: { params: DatasetPath, query: BatchDeleteQuery },
  response: { status: 200, description: 'What was done', schema: BatchDeleted },
  errors: [403, 404, 409],
  handler: (ctx, { params, query }) =>
    ctx.state.services.batchPredict.stop(ctx.state.actor, params.owner, params.dataset, query.previewJobId),
});

export const batchPredictRoutes = [startBatchPredict, batchPredictStatus, stopBatchPredict];
