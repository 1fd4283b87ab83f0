import { hostname } from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import type { Orm } from '../db/orm.ts';
import { newId } from '../db/ids.ts';
import { query } from '../db/sql.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL } from './job-queue.ts';
import type { JobProgress } from './job.entity.ts';

/** What a handler gets: its job, its own EntityManager, a signal that fires on cancel or shutdown. */
export interface JobContext {
  id: string;
  workspaceId: string;
  subjectId: string | null;
  payload: Record<string, unknown>;
  /** 1 on the first run; more when a dead process's job is taken again (handlers resume from what they kept). */
  attempt: number;
  em: EntityManager;
  signal: AbortSignal;
  log: Logger;
  /** Records progress; writes at most every PROGRESS_WRITE_MS, and always the last value before the job ends. */
  progress(progress: JobProgress): void;
  /**
   * Locks the job's row in `tx` and throws unless this attempt still holds the job and nobody asked to cancel it:
   * the first statement of the transaction that makes the job's work visible, so a cancel or a takeover either
   * waits for that commit or wins over it.
   */
  confirmHeld(tx: EntityManager): Promise<void>;
}

/** Runs one kind of job; the object `run` resolves with is stored as the job's result. */
export interface JobHandler {
  run(context: JobContext): Promise<Record<string, unknown>>;
  /** After a failure or cancellation (not after success): undo what the attempt left behind. */
  discard?(context: JobContext): Promise<void>;
}

/** A failure the user can act on: its message becomes the job's error as is. */
export class JobFailure extends Error {}

const PROGRESS_WRITE_MS = 1000;
const POLL_MS = 5000;

/** The columns a job is run from, as SQL returns them. */
export interface JobRow {
  id: string;
  kind: string;
  workspace_id: string;
  subject_id: string | null;
  payload: Record<string, unknown>;
  attempts: number;
}

interface ClaimedJob extends JobRow {
  /** Asked to stop while its last process was dying: it is not run again, only cleaned up. */
  cancel_requested: boolean;
}

/**
 * Takes queued jobs from PostgreSQL and runs them, at most `concurrency` at a time per process. Any
 * number of replicas can run one: a job is taken with FOR UPDATE SKIP LOCKED and held by a lease the
 * runner renews; a job whose lease lapsed (its process died) is taken again until maxAttempts, then
 * failed. Replicas wake on NOTIFY and poll as a fallback.
 */
export class JobRunner {
  private readonly orm: Orm;
  private readonly handlers: Record<string, JobHandler>;
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly leaseSeconds: number;
  private readonly owner = `${hostname()}:${process.pid}:${newId().slice(16)}`;
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private pollTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private filling: Promise<void> | undefined;
  private refill = false;

  constructor(orm: Orm, handlers: Record<string, JobHandler>, options: { log: Logger; concurrency: number; leaseSeconds: number }) {
    this.orm = orm;
    this.handlers = handlers;
    this.log = options.log;
    this.concurrency = options.concurrency;
    this.leaseSeconds = options.leaseSeconds;
  }

  listen(notifications: Notifications): void {
    // The payload is the queued job's kind: work for worker hosts is not this runner's.
    notifications.on(JOBS_CHANNEL, (kind) => kind in this.handlers && this.wake());
    notifications.on(JOB_CANCEL_CHANNEL, (jobId) => this.running.get(jobId)?.controller.abort('cancelled'));
    notifications.onReconnect(() => this.wake());
  }

  start(): void {
    this.pollTimer = setInterval(() => this.wake(), POLL_MS);
    this.pollTimer.unref();
    this.wake();
  }

  /** Takes jobs until the slots are full or none is waiting; calls that arrive meanwhile fill again after. */
  wake(): void {
    if (this.stopped) return;
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = this.fill()
      .catch((error) => this.log.warn({ err: error }, 'taking jobs failed'))
      .finally(() => {
        this.filling = undefined;
        if (this.refill) {
          this.refill = false;
          this.wake();
        }
      });
  }

  private async fill(): Promise<void> {
    const em = this.orm.em.fork() as EntityManager;
    await this.failExhausted(em);
    while (!this.stopped && this.running.size < this.concurrency) {
      const job = await this.claim(em);
      if (!job) return;
      const controller = new AbortController();
      if (job.cancel_requested) controller.abort('cancelled');
      const done = this.execute(job, controller).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
      this.running.set(job.id, { controller, done });
    }
  }

  /** Jobs whose lease lapsed on their last allowed attempt: their processes kept dying, so they fail (cancelled ones end cancelled, through claim). */
  private async failExhausted(em: EntityManager): Promise<void> {
    await query(
      em,
      `update jobs set status = 'failed', error = 'The job was interrupted ' || attempts || ' times (its process stopped) and was given up',
         finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
       where status = 'running' and lease_expires_at < now() and attempts >= max_attempts and not cancel_requested and kind = any(?::text[])`,
      [`{${Object.keys(this.handlers).join(',')}}`],
    );
  }

  /** A queued job, or one whose process died (its lease lapsed): to run again, or only to clean up when it was cancelled meanwhile. */
  private async claim(em: EntityManager): Promise<ClaimedJob | undefined> {
    const [job] = await query<ClaimedJob>(
      em,
      `update jobs j set status = 'running', lease_owner = ?, lease_expires_at = now() + make_interval(secs => ?), attempts = j.attempts + 1,
         started_at = coalesce(j.started_at, now()), updated_at = now()
       where j.id = (select id from jobs where kind = any(?::text[])
                       and (status = 'queued' or (status = 'running' and lease_expires_at < now() and (attempts < max_attempts or cancel_requested)))
                     order by priority desc, created_at, id for update skip locked limit 1)
       returning j.id, j.kind, j.workspace_id, j.subject_id, j.payload, j.attempts, j.cancel_requested`,
      [this.owner, this.leaseSeconds, `{${Object.keys(this.handlers).join(',')}}`],
    );
    return job;
  }

  private async execute(job: ClaimedJob, controller: AbortController): Promise<void> {
    const em = this.orm.em.fork() as EntityManager;
    const log = this.log.child({ jobId: job.id, kind: job.kind });
    let pending: JobProgress | undefined;
    let lastWrite = 0;
    const writeProgress = async () => {
      if (!pending) return;
      const progress = pending;
      pending = undefined;
      lastWrite = Date.now();
      await query(this.orm.em.fork() as EntityManager, 'update jobs set progress = ?::jsonb, updated_at = now() where id = ? and lease_owner = ?', [JSON.stringify(progress), job.id, this.owner]);
    };
    const context: JobContext = {
      id: job.id,
      workspaceId: job.workspace_id,
      subjectId: job.subject_id,
      payload: job.payload,
      attempt: job.attempts,
      em,
      signal: controller.signal,
      log,
      progress: (progress) => {
        pending = progress;
        if (Date.now() - lastWrite >= PROGRESS_WRITE_MS) writeProgress().catch((error) => log.warn({ err: error }, 'progress write failed'));
      },
      confirmHeld: async (tx) => {
        const [row] = await query<{ cancel_requested: boolean }>(
          tx,
          `select cancel_requested from jobs where id = ? and lease_owner = ? and status = 'running' for update`,
          [job.id, this.owner],
        );
        if (!row) controller.abort('lease lost');
        else if (row.cancel_requested) controller.abort('cancelled');
        controller.signal.throwIfAborted();
      },
    };
    const renewTimer = setInterval(() => this.renew(job.id, controller).catch((error) => log.warn({ err: error }, 'lease renewal failed')), (this.leaseSeconds * 1000) / 3);
    const handler = this.handlers[job.kind];
    try {
      // A job cancelled while its process was dying is only cleaned up (below), never run again.
      controller.signal.throwIfAborted();
      const result = await handler.run(context);
      await writeProgress();
      await this.finish(job.id, 'completed', { result });
      log.info('job completed');
    } catch (error) {
      await writeProgress().catch(() => undefined);
      // Another process holds the job now: what this attempt left is that process's to resume.
      if (controller.signal.reason === 'lease lost') return;
      if (this.stopped && controller.signal.reason === 'shutdown') {
        // Another process (or this one after a restart) resumes it: give it back now rather than when the lease lapses.
        await query(em, `update jobs set status = 'queued', lease_owner = null, lease_expires_at = null, attempts = attempts - 1, updated_at = now() where id = ? and lease_owner = ?`, [job.id, this.owner]);
        return;
      }
      const cancelled = controller.signal.aborted && controller.signal.reason === 'cancelled';
      if (!cancelled && !(error instanceof JobFailure)) log.error({ err: error }, 'job failed');
      await handler.discard?.(context).catch((discardError: unknown) => log.error({ err: discardError }, 'cleaning up a failed job failed'));
      await this.finish(job.id, cancelled ? 'cancelled' : 'failed', { error: cancelled ? 'Cancelled' : failureMessage(error) });
    } finally {
      clearInterval(renewTimer);
    }
  }

  /** Extends the lease; a cancel request or a lost lease aborts the handler. */
  private async renew(jobId: string, controller: AbortController): Promise<void> {
    const [row] = await query<{ cancel_requested: boolean }>(
      this.orm.em.fork() as EntityManager,
      `update jobs set lease_expires_at = now() + make_interval(secs => ?) where id = ? and lease_owner = ? and status = 'running' returning cancel_requested`,
      [this.leaseSeconds, jobId, this.owner],
    );
    if (!row) controller.abort('lease lost');
    else if (row.cancel_requested) controller.abort('cancelled');
  }

  private async finish(jobId: string, status: 'completed' | 'failed' | 'cancelled', outcome: { result?: Record<string, unknown>; error?: string }): Promise<void> {
    await query(
      this.orm.em.fork() as EntityManager,
      `update jobs set status = ?, result = ?::jsonb, error = ?, finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
       where id = ? and lease_owner = ?`,
      [status, outcome.result ? JSON.stringify(outcome.result) : null, outcome.error ?? null, jobId, this.owner],
    );
  }

  /** Aborts running handlers (their jobs go back to the queue) and waits for them. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    await this.filling;
    for (const { controller } of this.running.values()) controller.abort('shutdown');
    await Promise.allSettled([...this.running.values()].map((entry) => entry.done));
  }
}

function failureMessage(error: unknown): string {
  if (error instanceof JobFailure) return error.message;
  return 'The job failed because of an internal error; see the control-plane log';
}
