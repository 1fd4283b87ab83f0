// /api/training/* and the model's own training resource, /api/models/{owner}/{project}/{model}/training.
import { defineRoute } from '../http/define-route.ts';
import { ModelPath } from '../models/model.schemas.ts';
import { GpuAvailability, GpuAvailabilityQuery } from './gpu-availability.schemas.ts';
import { ModelTraining, TrainingCancelled, TrainingStart, TrainingStarted } from './training.schemas.ts';

export const gpuAvailability = defineRoute({
  method: 'GET',
  path: '/api/training/gpu-availability',
  tag: 'Training',
  summary: 'Stock level of each GPU type on connected hosts, keyed by GPU type ID',
  description:
    'Counts GPUs of connected hosts (heard from within HOST_LOST_GRACE_SECONDS) in the appliance-wide pool, less those running jobs hold; `managed=true` (needs a key, else 401) adds the hosts ' +
    "private to the key's workspace. Every known GPU type ID is listed, plus any other type a host reports, and `cpu` (connected CPU-only hosts, " +
    'which run jobs with gpuType cpu). Each is High (at least half free), Medium (some free), Low (all busy: a job waits) or null (none connected). ' +
    '`detail=true` answers the counts instead: per type its status (available, busy, unavailable), total, free and memory.',
  auth: 'optional',
  limit: 'default',
  request: { query: GpuAvailabilityQuery },
  response: {
    status: 200,
    description: 'Stock levels by GPU type (or with detail=true the counts)',
    schema: GpuAvailability,
  },
  errors: [401],
  handler: (ctx, { query }) =>
    query.detail
      ? ctx.state.services.gpuAvailability.read(ctx.state.actor, query.managed)
      : ctx.state.services.gpuAvailability.levels(ctx.state.actor, query.managed),
});

export const startTraining = defineRoute({
  method: 'POST',
  path: '/api/training/start',
  tag: 'Training',
  summary: 'Train a model on a worker host with the ultralytics trainer (editor or above)',
  description:
    'The job waits for a free GPU of gpuType on a connected host (the pool or the workspace’s own), then runs plain `yolo train` ' +
    'there with a key minted for this job alone, reporting through /api/webhooks/*. trainArgs.data is ul://owner/datasets/slug; ' +
    'trainArgs.model a model YAML (from scratch) or ul://owner/project/model (fine-tune; nothing is downloaded from the internet). ' +
    'project, name, device and resume are set by the platform. 402 when credit is enforced (BILLING_ENFORCED) and the workspace’s credit cannot cover the estimate ' +
    '(epochs × seconds per epoch, measured from earlier runs of the type, × price per GPU-hour); 503 when no connected host has ' +
    'that GPU type at all (busy ones just queue the job); 409 while the model trains. gpuType cpu runs on any host’s CPU slot.',
  auth: 'key',
  limit: 'training',
  request: { body: TrainingStart },
  response: { status: 200, description: 'Queued', schema: TrainingStarted },
  errors: [402, 403, 404, 409, 503],
  handler: (ctx, { body }) => ctx.state.services.training.start(ctx.state.actor, body),
});

export const readTraining = defineRoute({
  method: 'GET',
  path: '/api/models/:owner/:project/:model/training',
  tag: 'Training',
  summary: "The model's training job, or null if never trained",
  description:
    'The newest training: status (pending while queued, starting, running, completed, failed, cancelled), epoch progress, timing in milliseconds with an ETA, ' +
    'compute (GPU type, host, device, attempts), train args, the last epoch’s metrics (epochMetrics) and every epoch’s (history), the estimate and a safe ' +
    'error { message, timestamp }. Runs started on your own machine (`yolo train project=owner/project`) show too, with source own-compute and compute null. ' +
    'Models of public projects can be read anonymously.',
  auth: 'optional',
  limit: 'default',
  request: { params: ModelPath },
  response: { status: 200, description: 'The job', schema: ModelTraining },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.training.read(ctx.state.actor, params),
});

export const cancelTraining = defineRoute({
  method: 'DELETE',
  path: '/api/models/:owner/:project/:model/training',
  tag: 'Training',
  summary: 'Cancel the model’s training (editor or above)',
  description:
    'Answers status cancelled, as the spec’s state table names it. A queued job is cancelled at once. A running trainer is told in its next webhook ' +
    'answer, stops after its epoch and uploads what it has (the answer then carries a warning, and the training reads running until it has); its host ' +
    'stops it after TRAINING_CANCEL_GRACE_SECONDS if it has not. A run on your own machine that has reported nothing for TRAINING_CANCEL_GRACE_SECONDS ' +
    'is not listening (crashed, interrupted, its machine gone) and ends at once; one that falls silent after the request ends cancelled that long ' +
    'after its last report. 409 when no training is active.',
  auth: 'key',
  limit: 'training',
  request: { params: ModelPath },
  response: {
    status: 200,
    description: 'Cancelled (with a warning while the trainer stops)',
    schema: TrainingCancelled,
  },
  errors: [403, 404, 409],
  handler: (ctx, { params }) => ctx.state.services.training.cancel(ctx.state.actor, params),
});

export const trainingRoutes = [gpuAvailability, startTraining, readTraining, cancelTraining];
