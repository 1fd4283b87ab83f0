import type { AppContext } from '../http/app-context.ts';
import { defineRoute } from '../http/define-route.ts';
import {
  CheckpointUploadAnswer,
  CheckpointUploadRequest,
  MetricsAnswer,
  MetricsEnvelope,
  NoBody,
  ReferencePath,
} from './webhook.schemas.ts';

const CLIENT =
  'Called by the `ultralytics` package (ULTRALYTICS_PLATFORM_URL, ULTRALYTICS_API_KEY): a user key, or the key a training job gets.';

const redirect = (ctx: AppContext, url: string) => {
  ctx.status = 302;
  ctx.set('Location', url);
};

export const trainingMetrics = defineRoute({
  method: 'POST',
  path: '/api/webhooks/training/metrics',
  tag: 'Webhooks',
  summary: 'A training event from a `yolo train` process',
  description:
    `${CLIENT} Every answer has received: true, the event, mode (cloud for a training job's key, remote for a run on your own machine), modelId and runId. ` +
    'Events: training_started (answers also modelSlug and modelUrl; without modelId, project "owner/project" and name pick the model, ' +
    'creating the project, and the model under the next free name when that one already trained), epoch_end, console_output, ' +
    'checkpoint_saved (modelPath = gcsPath of an upload makes it the weights), training_complete (final metrics, bestEpoch, bestFitness, classNames, ' +
    'plots, per-image validation rows), training_failed, training_progress and system_metrics. Every answer has cancelled: true once a user ' +
    'cancelled the training; the trainer then stops after its epoch. Rate category Metrics (RATE_LIMIT_METRICS, 600 per minute per key): ' +
    'a trainer posts about two events per epoch (epoch_end, a console chunk of 5 lines) and a console chunk every 5 s, and drops an event ' +
    'it is refused, so the limit sits far above any real training (epochs would have to last under 0.2 s) while bounding a runaway client.',
  auth: 'key',
  jobKeys: true,
  limit: 'metrics',
  request: { body: MetricsEnvelope },
  documentBody: true,
  response: { status: 200, description: 'Recorded', schema: MetricsAnswer },
  errors: [403, 404],
  handler: (ctx, { body }) => ctx.state.services.trainingEvents.receive(ctx.state.actor, body),
});

export const checkpointUpload = defineRoute({
  method: 'POST',
  path: '/api/webhooks/models/upload',
  tag: 'Webhooks',
  summary: 'A signed URL to PUT a training checkpoint to',
  description: `${CLIENT} The checkpoint becomes the model's weights once checkpoint_saved (or training_complete) names its gcsPath.`,
  auth: 'key',
  jobKeys: true,
  limit: 'upload',
  request: { body: CheckpointUploadRequest },
  response: { status: 200, description: 'Where to PUT the file', schema: CheckpointUploadAnswer },
  errors: [403, 404],
  handler: (ctx, { body }) => ctx.state.services.checkpoints.issue(ctx.state.actor, body),
});

export const datasetReference = defineRoute({
  method: 'HEAD',
  path: '/api/webhooks/datasets/:owner/:dataset/export',
  tag: 'Webhooks',
  summary: 'Resolves ul://{owner}/datasets/{dataset}: 302 to the signed NDJSON export',
  description: `${CLIENT} The Location path stays the same between calls (only the signature changes), so the client's cache of the converted dataset holds.`,
  auth: 'key',
  jobKeys: true,
  limit: 'download',
  request: { params: ReferencePath.dataset },
  response: { status: 302, description: 'Location: the signed .ndjson URL', schema: NoBody, contentType: 'none' },
  errors: [403, 404],
  handler: async (ctx, { params }) =>
    redirect(
      ctx,
      (await ctx.state.services.versions.export(ctx.state.actor, params.owner, params.dataset, undefined)).downloadUrl,
    ),
});

export const modelReference = defineRoute({
  method: 'HEAD',
  path: '/api/webhooks/models/:owner/:project/:model/download',
  tag: 'Webhooks',
  summary: 'Resolves ul://{owner}/{project}/{model}: 302 to the signed weights (.pt)',
  description: `${CLIENT} 404 when the model has no weights yet.`,
  auth: 'key',
  jobKeys: true,
  limit: 'download',
  request: { params: ReferencePath.model },
  response: { status: 302, description: 'Location: the signed weights URL', schema: NoBody, contentType: 'none' },
  errors: [403, 404],
  handler: async (ctx, { params }) => {
    const [file] = (await ctx.state.services.models.files(ctx.state.actor, params)).files;
    if (!file) return void (ctx.status = 404);
    redirect(ctx, file.downloadUrl);
  },
});

export const webhookRoutes = [trainingMetrics, checkpointUpload, datasetReference, modelReference];
