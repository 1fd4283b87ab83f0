import { defineRoute } from '../http/define-route.ts';
import { JobCancelled, JobPath, JobRead } from './job.schemas.ts';

export const readJob = defineRoute({
  method: 'GET',
  path: '/api/jobs/:jobId',
  tag: 'Jobs',
  summary: 'A background job (an ingest): status, progress, counts and errors',
  description:
    'Statuses: queued → running → completed, failed or cancelled. progress has stage, percent, processed and total while it runs; ' +
    "result holds the counts once completed. Jobs of other workspaces are 404.",
  auth: 'key',
  limit: 'default',
  request: { params: JobPath },
  response: { status: 200, description: 'The job', schema: JobRead },
  errors: [404],
  handler: async (ctx, { params }) => ({ job: await ctx.state.services.jobs.read(ctx.state.actor, params.jobId) }),
});

export const cancelJob = defineRoute({
  method: 'DELETE',
  path: '/api/jobs/:jobId',
  tag: 'Jobs',
  summary: 'Cancel a queued or running job (editor)',
  description: 'A cancelled ingest leaves the dataset as it was. A job that already ended is 409.',
  auth: 'key',
  limit: 'default',
  request: { params: JobPath },
  response: { status: 200, description: 'Cancelled, or asked to stop (status running until it has)', schema: JobCancelled },
  errors: [403, 404, 409],
  handler: (ctx, { params }) => ctx.state.services.jobs.cancel(ctx.state.actor, params.jobId),
});

export const jobRoutes = [readJob, cancelJob];
