import { AGENT_ROUTES, JobSpec } from '@vp/protocol';
import { z } from 'zod';
import { ObjectId } from '../db/ids.ts';
import { defineRoute } from '../http/define-route.ts';
import { queryInt } from '../validation/integers.ts';

/** The protocol's rule for an output's name (a plain file name), so a bad one is a 400 here too. */
const OutputName = JobSpec.shape.outputs.unwrap().element.shape.name;

export const putJobOutput = defineRoute({
  method: 'PUT',
  path: AGENT_ROUTES.output,
  tag: 'Workers',
  summary: "A worker host uploads one of a job's outputs, such as an exported model (worker key)",
  description:
    'Called by vp-worker after a job with outputs exited 0 and before it reports the job completed; a directory output comes as one zip ' +
    'archive. Only the host running the attempt may, with a Content-Length of at most JOB_OUTPUT_MAX_BYTES. A later upload of the same ' +
    "name (the job's next attempt, or the same one after an agent restart) replaces the earlier one.",
  auth: 'public',
  limit: null,
  request: { params: z.object({ jobId: ObjectId, name: OutputName }), query: z.object({ attempt: queryInt().min(1) }) },
  streamedBody: { contentType: 'application/octet-stream', description: 'The file, Content-Length bytes' },
  response: {
    status: 200,
    description: 'Stored and recorded',
    schema: z.object({ success: z.literal(true), size: z.number().int(), sha256: z.string().regex(/^[0-9a-f]{64}$/) }),
  },
  errors: [400, 401, 404, 409, 411, 413],
  handler: (ctx, { params, query }) =>
    ctx.state.services.jobOutputs.receive(
      ctx.get('authorization') || undefined,
      { jobId: params.jobId, name: params.name, attempt: query.attempt },
      ctx.req,
      ctx.get('content-length') || undefined,
    ),
});
