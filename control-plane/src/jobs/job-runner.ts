import { hostname } from 'node:os';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import type { Orm } from '../db/orm.ts';
import { newId } from '../db/ids.ts';
import { pgArray } from '../db/sql.ts';
import type { ClaimedJob, JobLifecycle } from './job-lifecycle.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL } from './job-queue.ts';
import type { JobProgress } from './job.entity.ts';
import { lockHeldJob, recordHeldProgress, renewHeldLease } from './job.store.ts';

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
  /** A job given up with no attempt running (its processes kept dying): delete what its attempts left where this runs. */
  abandoned?(jobId: string): Promise<void>;
}

/** A failure the user can act on: its message becomes the job's error as is. */
export class JobFailure extends Error {}

const PROGRESS_WRITE_MS = 1000;
const POLL_MS = 5000;

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
  private readonly lifecycle: JobLifecycle;
  private readonly owner = `${hostname()}:${process.pid}:${newId().slice(16)}`;
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private pollTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private filling: Promise<void> | undefined;
  private refill = false;

  constructor(
    orm: Orm,
    handlers: Record<string, JobHandler>,
    options: { log: Logger; concurrency: number; leaseSeconds: number; lifecycle: JobLifecycle },
  ) {
    this.orm = orm;
    this.lifecycle = options.lifecycle;
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
    const kinds = pgArray(Object.keys(this.handlers));
    for (const job of await this.lifecycle.failExhausted(em, kinds)) {
      await this.handlers[job.kind]
        ?.abandoned?.(job.id)
        .catch((error: unknown) => this.log.warn({ err: error, jobId: job.id }, 'cleaning up a given-up job failed'));
    }
    while (!this.stopped && this.running.size < this.concurrency) {
      const job = await this.lifecycle.claim(em, this.owner, this.leaseSeconds, kinds);
      if (!job) return;
      const controller = new AbortController();
      if (job.cancel_requested) controller.abort('cancelled');
      const done = this.runClaimed(job, controller).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
      this.running.set(job.id, { controller, done });
    }
  }

  private async runClaimed(job: ClaimedJob, controller: AbortController): Promise<void> {
    const em = this.orm.em.fork() as EntityManager;
    const log = this.log.child({ jobId: job.id, kind: job.kind });
    let pending: JobProgress | undefined;
    let latest: JobProgress | undefined;
    let lastWrite = 0;
    const writeProgress = async () => {
      if (!pending) return;
      const progress = pending;
      pending = undefined;
      lastWrite = Date.now();
      await recordHeldProgress(this.orm.em.fork() as EntityManager, job.id, this.owner, progress);
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
        latest = progress;
        if (Date.now() - lastWrite >= PROGRESS_WRITE_MS)
          writeProgress().catch((error) => log.warn({ err: error }, 'progress write failed'));
      },
      confirmHeld: async (tx) => {
        const row = await lockHeldJob(tx, job.id, this.owner);
        if (!row) controller.abort('lease lost');
        else if (row.cancel_requested) controller.abort('cancelled');
        controller.signal.throwIfAborted();
      },
    };
    const renewTimer = setInterval(
      () => void this.renew(job.id, controller).catch((error) => log.warn({ err: error }, 'lease renewal failed')),
      (this.leaseSeconds * 1000) / 3,
    );
    const handler = this.handlers[job.kind];
    try {
      // A job cancelled while its process was dying is only cleaned up (below), never run again.
      controller.signal.throwIfAborted();
      const result = await handler.run(context);
      await this.lifecycle.finishHeld(em, job.id, this.owner, 'completed', {
        result,
        progress: { ...latest, stage: 'done', percent: 100 },
      });
      log.info('job completed');
    } catch (error) {
      await writeProgress().catch(() => undefined);
      // Another process holds the job now: what this attempt left is that process's to resume.
      if (controller.signal.reason === 'lease lost') return;
      if (this.stopped && controller.signal.reason === 'shutdown') {
        // Another process (or this one after a restart) resumes it: give it back now rather than when the lease lapses.
        await this.lifecycle.giveBack(em, job.id, this.owner);
        return;
      }
      const cancelled = controller.signal.aborted && controller.signal.reason === 'cancelled';
      if (!cancelled && !(error instanceof JobFailure)) log.error({ err: error }, 'job failed');
      await handler
        .discard?.(context)
        .catch((discardError: unknown) => log.error({ err: discardError }, 'cleaning up a failed job failed'));
      await this.lifecycle.finishHeld(em, job.id, this.owner, cancelled ? 'cancelled' : 'failed', {
        error: cancelled ? 'Cancelled' : failureMessage(error),
      });
    } finally {
      clearInterval(renewTimer);
    }
  }

  /** Extends the lease; a cancel request or a lost lease aborts the handler. */
  private async renew(jobId: string, controller: AbortController): Promise<void> {
    const row = await renewHeldLease(this.orm.em.fork() as EntityManager, jobId, this.owner, this.leaseSeconds);
    if (!row) controller.abort('lease lost');
    else if (row.cancel_requested) controller.abort('cancelled');
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
