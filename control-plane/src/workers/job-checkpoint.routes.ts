import { AGENT_ROUTES } from '@vp/protocol';
import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { defineRoute } from '../http/define-route.ts';
import { queryInt } from '../validation/integers.ts';
import { putJobOutput } from './job-output.routes.ts';

export const putJobCheckpoint = defineRoute({
  method: 'PUT',
  path: AGENT_ROUTES.checkpoint,
  tag: 'Workers',
  summary: "A worker host uploads a running training's last.pt (worker key)",
  description:
    'Called by vp-worker every TRAINING_CHECKPOINT_SECONDS while the checkpoint changes. Only the host running the attempt may; ' +
    'each upload replaces the previous one. A job requeued after its host was lost resumes from it.',
  auth: 'public',
  limit: null,
  request: { params: z.object({ jobId: ObjectId }), query: z.object({ attempt: queryInt().min(1) }) },
  streamedBody: { contentType: 'application/octet-stream', description: 'The checkpoint, Content-Length bytes' },
  response: {
    status: 200,
    description: 'Stored',
    schema: z.object({ success: z.literal(true), size: z.number().int() }),
  },
  errors: [401, 404, 409, 411, 413],
  handler: (ctx, { params, query }) =>
    ctx.state.services.jobCheckpoints.receive(
      ctx.get('authorization') || undefined,
      params.jobId,
      query.attempt,
      ctx.req,
      ctx.get('content-length') || undefined,
    ),
});

export const workerRoutes = [putJobCheckpoint, putJobOutput];
