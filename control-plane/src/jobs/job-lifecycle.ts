// The job state machine: every statement that changes a job's status is here (JOB_TRANSITIONS lists the moves;
// PostgreSQL refuses others). A host job that ends is settled in the same transaction: its kind's bookkeeping (the
// subject's status, keys, charges) commits with the end or not at all. settle_pending is set by the statement that
// ends it and cleared by that bookkeeping, so when the bookkeeping fails, or this process does not know the kind
// (vpctl), the flag stays and a scheduler retries it (settleNext).
// This module is the store for a job's status (and settle_pending): its guarded UPDATEs stay here rather than in
// job.store.ts because each is one step of the settling around it (same transaction, same savepoint), and keeping them
// out of the store means no other module can import a statement that changes a status. Everything else on the jobs
// table is in job.store.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { announceAuthChange } from '../auth/authenticator.ts';
import { pgArray, query } from '../db/sql.ts';
import type { HostJobAttempt, HostJobKind, HostJobOutcome } from '../scheduler/host-job-kinds.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL, REQUEUED_HOST_JOBS, SETTLE_JOBS } from './job-queue.ts';
import type { JobProgress, JobStatus } from './job.entity.ts';
import type { JobColumns } from './job.store.ts';

/**
 * The seconds the current attempt of a job whose host was lost ran, from the host's confirmation (none before it) until
 * the host was last heard from, not through the grace period.
 */
const RAN_UNTIL_LAST_HEARD = `coalesce(greatest(extract(epoch from least(now(),
  coalesce((select h.last_heartbeat_at from hosts h where h.id = j.host_id), now())) - j.accepted_at), 0), 0)`;
/**
 * A lost attempt whose own reports say it completed (d.completed_at, its kind's completedAt) ran at least until then,
 * though its host went silent earlier: a trainer goes on while its agent is down.
 */
const RAN_UNTIL_COMPLETED =
  'coalesce(greatest(extract(epoch from least(now(), d.completed_at) - j.accepted_at), 0), 0)';
/**
 * The run seconds of a job its host reported the end of (r: the report's ran seconds and end): at least what this
 * server saw it run, from the acceptance to that end; with the host's own measure of the attempt, that measure, which
 * replaces what a loss of the attempt counted, up to the time since the job first started.
 */
const RAN_AS_REPORTED = `greatest(j.run_seconds + coalesce(greatest(extract(epoch from r.ended_at - j.accepted_at), 0), 0),
  coalesce(least(j.run_seconds - j.lost_attempt_seconds + r.ran, extract(epoch from now() - coalesce(j.started_at, now()))), 0))`;
/** What every status-changing statement returns: enough to settle the job and tell what became of it. */
const CHANGED =
  'j.id, j.kind, j.workspace_id, j.subject_id, j.payload, j.attempts, j.host_id, j.status, j.settle_pending';

export type { JobColumns };

/** A job whose status a statement changed. */
export interface ChangedJob extends JobColumns {
  host_id: string | null;
  status: JobStatus;
  settle_pending: boolean;
}

/** A job a runner claimed (control-plane jobs). */
export interface ClaimedJob extends ChangedJob {
  /** Asked to stop while its last process was dying: it is not run again, only cleaned up. */
  cancel_requested: boolean;
}

/** What a host said of a job's end. */
export interface ReportedEnd {
  jobId: string;
  outcome: HostJobOutcome;
  exitCode?: number;
  error?: string;
  /** The attempt's whole run, start to exit, as its host measured it (protocol 6). */
  ranSeconds?: number;
  /** How long before the report it ended (an end held while the host's socket was down). */
  endedSecondsAgo?: number;
  /** It failed before it started on the host (protocol 8): nothing of it ran. */
  notStarted?: true;
}

export class JobLifecycle {
  private readonly kinds: Record<string, HostJobKind>;
  private readonly log: Logger | undefined;

  /** `kinds`: the host job kinds this process settles (none in vpctl: a running control plane settles for it). */
  constructor(kinds: Record<string, HostJobKind> = {}, log?: Logger) {
    this.kinds = kinds;
    this.log = log;
  }

  /**
   * Asks a job to stop: a queued one is cancelled (and settled) at once; a running one keeps running until whatever
   * runs it sees the request (every replica is told). Null when the job had already ended.
   */
  requestCancel(em: EntityManager, jobId: string): Promise<'cancelled' | 'running' | null> {
    return em.transactional(async (tx) => {
      const [job] = await query<ChangedJob>(
        tx,
        `update jobs j set cancel_requested = true, updated_at = now(),
           status = case when j.status = 'queued' then 'cancelled' else j.status end,
           finished_at = case when j.status = 'queued' then now() else j.finished_at end,
           error = case when j.status = 'queued' then 'Cancelled' else j.error end,
           settle_pending = j.settle_pending or (j.status = 'queued' and j.placement = 'host')
         where j.id = ? and j.status in ('queued', 'running') returning ${CHANGED}`,
        [jobId],
      );
      if (!job) return null;
      if (job.status === 'running') {
        await query(tx, `select pg_notify('${JOB_CANCEL_CHANNEL}', ?)`, [jobId]);
        return 'running';
      }
      await this.settle(tx, [job]);
      return 'cancelled';
    });
  }

  // --- Jobs a control plane runs (JobRunner): held by a lease the runner renews. ---

  /** A queued job, or one whose process died (its lease lapsed): to run again, or only to clean up when it was cancelled meanwhile. */
  async claim(em: EntityManager, owner: string, leaseSeconds: number, kinds: string): Promise<ClaimedJob | undefined> {
    const [job] = await query<ClaimedJob>(
      em,
      `update jobs j set status = 'running', lease_owner = ?, lease_expires_at = now() + make_interval(secs => ?), attempts = j.attempts + 1,
         started_at = coalesce(j.started_at, now()), updated_at = now()
       where j.id = (select id from jobs where kind = any(?::text[])
                       and (status = 'queued' or (status = 'running' and lease_expires_at < now() and (attempts < max_attempts or cancel_requested)))
                     order by priority desc, created_at, id for update skip locked limit 1)
       returning ${CHANGED}, j.cancel_requested`,
      [owner, leaseSeconds, kinds],
    );
    return job;
  }

  /** Jobs whose lease lapsed on their last allowed attempt: their processes kept dying, so they fail (cancelled ones end cancelled, through claim). */
  async failExhausted(em: EntityManager, kinds: string): Promise<Array<{ id: string; kind: string }>> {
    return query<{ id: string; kind: string }>(
      em,
      `update jobs set status = 'failed', error = 'The job was interrupted ' || attempts || ' times (its process stopped) and was given up',
         finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
       where status = 'running' and lease_expires_at < now() and attempts >= max_attempts and not cancel_requested and kind = any(?::text[])
       returning id, kind`,
      [kinds],
    );
  }

  /** A runner shutting down gives its job back now rather than when the lease lapses: another process resumes it. */
  async giveBack(em: EntityManager, jobId: string, owner: string): Promise<void> {
    await query(
      em,
      `update jobs set status = 'queued', lease_owner = null, lease_expires_at = null, attempts = attempts - 1, updated_at = now()
       where id = ? and lease_owner = ? and status = 'running'`,
      [jobId, owner],
    );
  }

  /** The runner's end of a job it still holds; a completed job's progress reads done. */
  async finishHeld(
    em: EntityManager,
    jobId: string,
    owner: string,
    status: HostJobOutcome,
    outcome: { result?: Record<string, unknown>; error?: string; progress?: JobProgress },
  ): Promise<void> {
    await query(
      em,
      `update jobs set status = ?, result = ?::jsonb, error = ?, progress = coalesce(?::jsonb, progress),
         finished_at = now(), lease_owner = null, lease_expires_at = null, updated_at = now()
       where id = ? and lease_owner = ? and status = 'running'`,
      [
        status,
        outcome.result ? JSON.stringify(outcome.result) : null,
        outcome.error ?? null,
        outcome.progress ? JSON.stringify(outcome.progress) : null,
        jobId,
        owner,
      ],
    );
  }

  // --- Jobs worker hosts run (the scheduler): held by their host's heartbeats. ---

  /** Assigns a queued job to a host, its lease running for the host's grace period. */
  async assign(
    tx: EntityManager,
    jobId: string,
    hostId: string,
    gpuIndexes: number[],
    graceSeconds: number,
  ): Promise<void> {
    await this.assignAll(tx, [{ jobId, hostId, gpuIndexes }], graceSeconds);
  }

  /** Assigns queued jobs to hosts in one statement (a dispatch's), each as assign does one. */
  async assignAll(
    tx: EntityManager,
    assignments: ReadonlyArray<{ jobId: string; hostId: string; gpuIndexes: number[] }>,
    graceSeconds: number,
  ): Promise<void> {
    if (assignments.length === 0) return;
    await query(
      tx,
      `update jobs j set status = 'running', host_id = a.host_id, gpu_indexes = a.gpu_indexes::jsonb, attempts = j.attempts + 1,
         accepted_at = null, lost_attempt_seconds = 0, lease_expires_at = now() + make_interval(secs => ?),
         started_at = coalesce(j.started_at, now()), progress = '{"stage":"assigned","percent":0}'::jsonb, updated_at = now()
       from unnest(?::text[], ?::text[], ?::text[]) as a(id, host_id, gpu_indexes) where j.id = a.id and j.status = 'queued'`,
      [
        graceSeconds,
        pgArray(assignments.map((assignment) => assignment.jobId)),
        pgArray(assignments.map((assignment) => assignment.hostId)),
        pgArray(assignments.map((assignment) => JSON.stringify(assignment.gpuIndexes))),
      ],
    );
  }

  /** A queued job whose command cannot be built (its inputs are gone): failed and settled. */
  async failUnprepared(tx: EntityManager, jobId: string, reason: string): Promise<void> {
    const ended = await query<ChangedJob>(
      tx,
      `update jobs j set status = 'failed', error = ?, finished_at = now(), settle_pending = true, updated_at = now()
       where j.id = ? and j.status = 'queued' returning ${CHANGED}`,
      [reason, jobId],
    );
    await this.settle(tx, ended);
  }

  /** A reconnecting host still runs an attempt that was requeued meanwhile and nobody took: it keeps it. */
  async reclaim(
    tx: EntityManager,
    jobId: string,
    hostId: string,
    attempt: number,
    gpuIndexes: number[],
    graceSeconds: number,
  ): Promise<void> {
    await query(
      tx,
      `update jobs set status = 'running', host_id = ?, attempts = ?, gpu_indexes = ?::jsonb, accepted_at = now(), finished_at = null,
         lease_expires_at = now() + make_interval(secs => ?), progress = '{"stage":"running"}'::jsonb, updated_at = now()
       where id = ? and status = 'queued'`,
      [hostId, attempt, JSON.stringify(gpuIndexes), graceSeconds, jobId],
    );
  }

  /**
   * The host reported the job's end (cancelled whatever the exit, once a user asked: a trainer stops cleanly), ended
   * when the host says it exited. An attempt that failed before it started there (a full disk) goes back to the queue
   * instead while the job is restartable with attempts left: the attempt counts, so a job no host can start still ends.
   * Null: it was not this host's running job.
   */
  finishReported(em: EntityManager, hostId: string, finished: ReportedEnd): Promise<ChangedJob | null> {
    return em.transactional(async (tx) => {
      if (finished.notStarted && finished.outcome === 'failed') {
        const [again] = await query<ChangedJob>(
          tx,
          `update jobs j set status = 'queued', host_id = null, gpu_indexes = null, accepted_at = null, lease_expires_at = null,
             progress = '{"stage":"queued","percent":0}'::jsonb, updated_at = now()
           where j.id = ? and j.host_id = ? and j.status = 'running' and j.accepted_at is null and not j.cancel_requested
             and j.restartable and j.attempts < j.max_attempts returning ${CHANGED}`,
          [finished.jobId, hostId],
        );
        if (again) {
          await query(tx, `select pg_notify('${JOBS_CHANNEL}', '${REQUEUED_HOST_JOBS}')`);
          // The attempt's job key must stop working on every replica now, as for a released attempt.
          await announceAuthChange(tx);
          return again;
        }
      }
      const [job] = await query<ChangedJob>(
        tx,
        `with r as (select ?::float8 as ran, now() - make_interval(secs => coalesce(?::float8, 0)) as ended_at)
         update jobs j set status = case when j.cancel_requested then 'cancelled' else ? end,
           error = case when j.cancel_requested then 'Cancelled' when ? = 'completed' then null else ? end,
           result = case when ?::int is null then j.result else coalesce(j.result, '{}'::jsonb) || jsonb_build_object('exitCode', ?::int) end,
           progress = case when ? = 'completed' then jsonb_build_object('stage', 'done', 'percent', 100) else j.progress end,
           run_seconds = ${RAN_AS_REPORTED},
           finished_at = greatest(r.ended_at, coalesce(j.started_at, now())),
           lost_attempt_seconds = 0, lease_expires_at = null, gpu_indexes = null, settle_pending = true, updated_at = now()
         from r where j.id = ? and j.host_id = ? and j.status = 'running' returning ${CHANGED}`,
        [
          finished.ranSeconds ?? null,
          finished.endedSecondsAgo ?? null,
          finished.outcome,
          finished.outcome,
          finished.error ?? `The job ${finished.outcome}`,
          finished.exitCode ?? null,
          finished.exitCode ?? null,
          finished.outcome,
          finished.jobId,
          hostId,
        ],
      );
      if (!job) return null;
      await this.settle(tx, [job]);
      return job;
    });
  }

  /**
   * Lets go of running host jobs whose host lost them (`where` selects them, on alias j). A job whose own reports say
   * it completed (its kind's completedWhen: a trainer that finished while its agent was down) is completed, never run
   * again, ending when it completed and counted as running until then (its kind's completedAt); an assignment the
   * host never confirmed goes back to the queue as if never tried; a cancel request ends as cancelled; a restartable
   * job with attempts left is requeued; anything else fails with `reason`.
   */
  release(em: EntityManager, where: string, params: unknown[], reason: string): Promise<ChangedJob[]> {
    const completing = Object.entries(this.kinds).filter(([, kind]) => kind.completedWhen);
    const completed = completing
      .map(([name, kind]) => `when j.kind = '${name}' and (${kind.completedWhen}) then 'completed'`)
      .join(' ');
    const completedAt = completing
      .filter(([, kind]) => kind.completedAt)
      .map(([name, kind]) => `when j.kind = '${name}' then (${kind.completedAt})`)
      .join(' ');
    return em.transactional(async (tx) => {
      const changed = await query<ChangedJob>(
        tx,
        `with lost as (select j.id from jobs j where j.placement = 'host' and j.status = 'running' and (${where}) for update skip locked),
         decided as (
           select j.id, case ${completed} when j.cancel_requested then 'cancelled'
                             when j.accepted_at is null or (j.restartable and j.attempts < j.max_attempts) then 'queued'
                             else 'failed' end as next,
                  ${completedAt ? `case ${completedAt} end` : 'null::timestamptz'} as completed_at
           from jobs j join lost using (id))
         update jobs j set status = d.next,
           attempts = case when j.accepted_at is null and d.next = 'queued' then j.attempts - 1 else j.attempts end,
           error = case d.next when 'cancelled' then 'Cancelled' when 'failed' then ? else null end,
           finished_at = case when d.next = 'queued' then null when d.next = 'completed' then least(now(), coalesce(d.completed_at, now())) else now() end,
           progress = case d.next when 'queued' then '{"stage":"queued","percent":0}'::jsonb
                                  when 'completed' then jsonb_build_object('stage', 'done', 'percent', 100) else j.progress end,
           host_id = case when d.next = 'queued' then null else j.host_id end,
           settle_pending = d.next <> 'queued',
           run_seconds = j.run_seconds + case when d.next = 'completed' and d.completed_at is not null
             then greatest(${RAN_UNTIL_LAST_HEARD}, ${RAN_UNTIL_COMPLETED}) else ${RAN_UNTIL_LAST_HEARD} end,
           lost_attempt_seconds = case when d.next = 'queued' then j.lost_attempt_seconds + ${RAN_UNTIL_LAST_HEARD} else 0 end,
           gpu_indexes = null, accepted_at = null, lease_expires_at = null, updated_at = now()
         from decided d where j.id = d.id
         returning ${CHANGED}`,
        [...params, reason],
      );
      if (changed.some((job) => job.status === 'queued'))
        await query(tx, `select pg_notify('${JOBS_CHANNEL}', '${REQUEUED_HOST_JOBS}')`);
      // A job key works only while its job runs: every replica's key cache must drop the released attempts' keys now.
      if (changed.length > 0) await announceAuthChange(tx);
      await this.settle(tx, changed);
      return changed;
    });
  }

  /** Host jobs whose lease (renewed by their host's heartbeats) ran out: the host has been gone too long. */
  releaseExpired(em: EntityManager, graceSeconds: number): Promise<ChangedJob[]> {
    return this.release(
      em,
      'j.lease_expires_at <= now()',
      [],
      `The host running the job was lost (no heartbeat for ${graceSeconds} s)`,
    );
  }

  /** A host removed by its operator: its running jobs end as cancelled now (the agent, its key revoked, stops them). */
  async cancelOnHost(em: EntityManager, hostId: string): Promise<void> {
    await em.transactional(async (tx) => {
      await query(
        tx,
        `update jobs set cancel_requested = true, updated_at = now() where host_id = ? and status = 'running'`,
        [hostId],
      );
      await this.release(tx, 'j.host_id = ?', [hostId], 'The host was disconnected');
    });
  }

  /**
   * Settles one ended job whose bookkeeping is still owed (it failed before, or was left for a process that knows the
   * kind), taken with SKIP LOCKED so replicas share the work. False when none is left. A job whose bookkeeping fails
   * again goes to the back of the line, so it cannot hold up the others.
   */
  async settleNext(em: EntityManager): Promise<boolean> {
    let failed: string | undefined;
    const found = await em.transactional(async (tx) => {
      const [job] = await query<ChangedJob>(
        tx,
        `select ${CHANGED} from jobs j where j.settle_pending and j.kind = any(?::text[]) order by j.updated_at limit 1 for update skip locked`,
        [`{${Object.keys(this.kinds).join(',')}}`],
      );
      if (!job) return false;
      if (!(await this.settle(tx, [job]))) failed = job.id;
      return true;
    });
    if (failed) await query(em, 'update jobs set updated_at = now() where id = ?', [failed]);
    return found;
  }

  /**
   * Runs the bookkeeping of each ended job in `jobs` that owes it, in a savepoint of the caller's transaction that also
   * clears its flag; false when one failed or its kind is unknown here (the flag stays; a scheduler is told to retry).
   */
  private async settle(tx: EntityManager, jobs: ChangedJob[]): Promise<boolean> {
    let allSettled = true;
    for (const job of jobs.filter((changed) => changed.settle_pending)) {
      const kind = this.kinds[job.kind];
      try {
        if (!kind) throw new Error(`this process does not settle ${job.kind} jobs`);
        await tx.transactional(async (savepoint) => {
          await kind.ended?.(savepoint, attemptOf(job), job.status as HostJobOutcome);
          await query(savepoint, 'update jobs set settle_pending = false where id = ?', [job.id]);
        });
      } catch (error) {
        if (kind)
          this.log?.error({ err: error, jobId: job.id }, 'the bookkeeping of an ended job failed; retried later');
        allSettled = false;
      }
    }
    if (!allSettled) await query(tx, `select pg_notify('${JOBS_CHANNEL}', '${SETTLE_JOBS}')`);
    return allSettled;
  }
}

function attemptOf(job: ChangedJob): HostJobAttempt {
  return {
    id: job.id,
    kind: job.kind,
    workspaceId: job.workspace_id,
    subjectId: job.subject_id,
    payload: job.payload,
    attempt: job.attempts,
    hostId: job.host_id ?? '',
    gpuIndexes: [],
  };
}
