import { defineRoute } from '../http/define-route.ts';
import { JobCancelled, JobList, JobListQuery, JobLogQuery, JobLogs, JobPath, JobRead } from './job.schemas.ts';

export const listJobs = defineRoute({
  method: 'GET',
  path: '/api/jobs',
  tag: 'Jobs',
  summary: "The workspace's background jobs across kinds, newest first (owner or admin)",
  description:
    'The queue as an operator sees it: every kind (ingest, training, export, deployment, dataset analysis, …) with its ' +
    'status, progress, attempts and the worker host running it; filter by status (active: queued or running) and kind; ' +
    'keyset pages (nextCursor). Cancel one with DELETE /api/jobs/{jobId}. Other roles: 403.',
  auth: 'key',
  limit: 'default',
  request: { query: JobListQuery },
  response: { status: 200, description: 'A page of jobs', schema: JobList },
  errors: [400, 403],
  handler: (ctx, { query }) => ctx.state.services.jobs.list(ctx.state.actor, query),
});

export const readJob = defineRoute({
  method: 'GET',
  path: '/api/jobs/:jobId',
  tag: 'Jobs',
  summary: 'A background job (an ingest): status, progress, counts and errors',
  description:
    'Statuses: queued → running → completed, failed or cancelled. progress has stage, percent, processed and total while it runs; ' +
    'result holds the counts once completed. Jobs of other workspaces are 404.',
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
  response: {
    status: 200,
    description: 'Cancelled, or asked to stop (status running until it has)',
    schema: JobCancelled,
  },
  errors: [403, 404, 409],
  handler: (ctx, { params }) => ctx.state.services.jobs.cancel(ctx.state.actor, params.jobId),
});

export const readJobLogs = defineRoute({
  method: 'GET',
  path: '/api/jobs/:jobId/logs',
  tag: 'Jobs',
  summary: "A worker job's output (stdout and stderr lines, in order)",
  description:
    'Lines stream in from the worker host while the job runs; read on with after=nextAfter until status has ended and no line is left. ' +
    'At most 100,000 lines are kept per job (a last line says when more were dropped). Control-plane jobs (ingest) have none. Jobs of other workspaces are 404.',
  auth: 'key',
  limit: 'default',
  request: { params: JobPath, query: JobLogQuery },
  response: { status: 200, description: 'A page of lines', schema: JobLogs },
  errors: [404],
  handler: (ctx, { params, query }) => ctx.state.services.jobs.logs(ctx.state.actor, params.jobId, query),
});

export const jobRoutes = [listJobs, readJob, readJobLogs, cancelJob];
