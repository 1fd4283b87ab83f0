import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { Conflict, Invalid, NotFound } from '../http/errors.ts';
import { INGEST_JOB } from '../ingest/ingest-payload.ts';
import { TRAINING_JOB } from '../training/training-payload.ts';
import type { JobLifecycle } from './job-lifecycle.ts';
import { Job } from './job.entity.ts';
import { jobLogLines, workspaceJobs, type JobCursor } from './job.store.ts';
import type { JobCancelled, JobList, JobListQuery, JobLogQuery, JobLogs, JobView } from './job.schemas.ts';

/** Reading and cancelling background jobs; a key sees the jobs of its own workspace only. */
export class JobService {
  private readonly em: EntityManager;
  private readonly lifecycle: JobLifecycle;

  constructor(em: EntityManager, lifecycle: JobLifecycle) {
    this.em = em;
    this.lifecycle = lifecycle;
  }

  private async find(actor: Actor, jobId: string): Promise<Job> {
    const key = requireKey(actor);
    const job = await this.em.findOne(Job, { id: jobId, workspace: key.workspaceId });
    if (!job) throw NotFound(`Job ${jobId} not found`);
    return job;
  }

  async read(actor: Actor, jobId: string): Promise<z.input<typeof JobView>> {
    return view(await this.find(actor, jobId));
  }

  /** The workspace's jobs across kinds, newest first (owners and admins: the queue is the operator's view). */
  async list(actor: Actor, query: z.output<typeof JobListQuery>): Promise<z.input<typeof JobList>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'admin');
    const jobs = await workspaceJobs(this.em, key.workspaceId, {
      statuses: query.status === 'active' ? ['queued', 'running'] : query.status && [query.status],
      kind: query.kind,
      after: query.cursor === undefined ? undefined : parseCursor(query.cursor),
      limit: query.limit + 1,
    });
    const page = jobs.slice(0, query.limit);
    const last = page.at(-1);
    return {
      jobs: page.map((job) => ({ ...view(job), host: job.host?.name ?? null })),
      nextCursor: jobs.length > query.limit && last ? `${last.createdAt.toISOString()}_${last.id}` : null,
    };
  }

  /** A host job's output in arrival order, a page at a time (any member of the job's workspace). */
  async logs(actor: Actor, jobId: string, page: z.output<typeof JobLogQuery>): Promise<z.input<typeof JobLogs>> {
    const job = await this.find(actor, jobId);
    const rows = await jobLogLines(this.em, job.id, page.after, page.limit);
    const lines = rows.map((row) => ({
      seq: Number(row.seq),
      stream: row.stream,
      line: row.line,
      at: new Date(row.at).toISOString(),
    }));
    return { lines, nextAfter: lines.at(-1)?.seq ?? page.after, status: job.status };
  }

  /** A queued job is cancelled at once; a running one is asked to stop and ends as cancelled, its work undone. */
  async cancel(actor: Actor, jobId: string): Promise<z.input<typeof JobCancelled>> {
    const job = await this.find(actor, jobId);
    requireRole(actor, job.workspace.id, 'editor');
    const status = await this.lifecycle.requestCancel(this.em, job.id);
    if (!status) throw Conflict(`The job is already ${job.status}`);
    return { success: true, status };
  }
}

export function view(job: Job): z.input<typeof JobView> {
  return {
    id: job.id,
    kind: job.kind,
    status: job.status,
    datasetId: job.kind === INGEST_JOB ? (job.subjectId ?? null) : null,
    modelId: job.kind === TRAINING_JOB ? (job.subjectId ?? null) : null,
    progress: job.progress ?? null,
    result: job.result ?? null,
    error: job.error ?? null,
    attempts: job.attempts,
    createdAt: job.createdAt.toISOString(),
    startedAt: job.startedAt?.toISOString() ?? null,
    finishedAt: job.finishedAt?.toISOString() ?? null,
  };
}

/** A nextCursor as list made it: the last job's creation time and ID. */
function parseCursor(cursor: string): JobCursor {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)_([0-9a-f]{24})$/.exec(cursor);
  const createdAt = new Date(match?.[1] ?? Number.NaN);
  if (!match || Number.isNaN(createdAt.getTime())) throw Invalid('cursor is not a nextCursor of this list');
  return { createdAt, id: match[2]! };
}
