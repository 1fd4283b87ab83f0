import type { EntityManager } from '@mikro-orm/postgresql';
import { JobSpec, type Hardware, type ServerMessage } from '@vp/protocol';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import type { Orm } from '../db/orm.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL, REQUEUED_HOST_JOBS, SETTLE_JOBS } from '../jobs/job-queue.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import {
  lockQueuedJobs,
  queuedHostJobs,
  runningHostJob,
  runningJobsOnHost,
  type QueuedHostJobRow,
} from '../jobs/job.store.ts';
import type { HostJobAttempt, HostJobKind } from './host-job-kinds.ts';
import { placeJobs, type QueuedJob } from './placement.ts';

/** A worker host whose socket this process holds. */
export interface LocalHost {
  hostId: string;
  /** Null for the appliance-wide pool, which takes every workspace's jobs; else only this workspace's. */
  workspaceId: string | null;
  hardware: Hardware;
  maxConcurrentJobs: number | undefined;
  /** The model formats its agent reported it exports to (`capabilities`, after the welcome); empty until then. */
  exporters: ReadonlySet<string>;
  /** The deployment region it serves (null: every region), as its operator connected it. */
  region: string | null;
  /** The services its agent reported it runs (`capabilities`); empty until then. */
  services: ReadonlySet<string>;
  /** Whether this socket is still the host's current session, holding it so until `tx` ends (no takeover in between). */
  holdsHost(tx: EntityManager): Promise<boolean>;
  send(message: ServerMessage): void;
}

const POLL_MS = 5000;
/** How soon a host looks again at a job another dispatch held when it wanted it. */
const RETRY_MS = 50;
/** Ended jobs settled in one go before giving the event loop back. */
const SETTLE_BATCH = 100;
/** Queued jobs looked at per dispatch; more than one host could take at once. */
const QUEUE_WINDOW = 200;

type QueuedRow = QueuedHostJobRow;

/**
 * Assigns queued host jobs to the worker hosts connected to this process. State lives in PostgreSQL, so any
 * number of replicas run one each: a job queued through any replica wakes them all (NOTIFY), each offers it to
 * its own hosts, and FOR UPDATE SKIP LOCKED lets exactly one take it. Jobs whose host stopped heartbeating for
 * the grace period are released by whichever replica looks first.
 */
export class HostScheduler {
  private readonly hosts = new Map<string, LocalHost>();
  private readonly dispatching = new Map<string, { again: boolean }>();
  private timer: NodeJS.Timeout | undefined;
  private settling: Promise<void> | undefined;
  private settleAgain = false;
  private stopped = false;
  private readonly orm: Orm;
  private readonly kinds: Record<string, HostJobKind>;
  private readonly log: Logger;
  readonly graceSeconds: number;
  /** Every status change of the jobs it schedules, settled with its kinds' bookkeeping. */
  readonly lifecycle: JobLifecycle;

  constructor(
    orm: Orm,
    kinds: Record<string, HostJobKind>,
    options: { log: Logger; graceSeconds: number; lifecycle: JobLifecycle },
  ) {
    this.orm = orm;
    this.kinds = kinds;
    this.log = options.log.child({ component: 'scheduler' });
    this.graceSeconds = options.graceSeconds;
    this.lifecycle = options.lifecycle;
  }

  em(): EntityManager {
    return this.orm.em.fork() as EntityManager;
  }

  listen(notifications: Notifications): void {
    // The payload is the queued job's kind: jobs the control planes run (ingest) need no dispatch.
    notifications.on(JOBS_CHANNEL, (payload) => {
      if (payload === SETTLE_JOBS) void this.tick();
      else if (payload === REQUEUED_HOST_JOBS || payload in this.kinds) this.wakeAll();
    });
    notifications.on(
      JOB_CANCEL_CHANNEL,
      (jobId) =>
        void this.forwardCancel(jobId).catch((error) =>
          this.log.warn({ err: error, jobId }, 'forwarding a cancel failed'),
        ),
    );
    notifications.onReconnect(() => this.wakeAll());
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), POLL_MS);
    this.timer.unref();
  }

  /** Stops taking work and waits for bookkeeping in progress (before the pool closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.settling;
  }

  attach(host: LocalHost): void {
    this.hosts.set(host.hostId, host);
    this.wake(host.hostId);
  }

  detach(hostId: string, host: LocalHost): void {
    if (this.hosts.get(hostId) === host) this.hosts.delete(hostId);
  }

  wake(hostId: string): void {
    if (this.stopped || !this.hosts.has(hostId)) return;
    const running = this.dispatching.get(hostId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.dispatching.set(hostId, state);
    void (async () => {
      do {
        state.again = false;
        const host = this.hosts.get(hostId);
        if (!host) break;
        const missed = await this.dispatch(host).catch((error) => {
          this.log.warn({ err: error, hostId }, 'dispatching jobs failed');
          return false;
        });
        if (missed) {
          // Another dispatch holds the job for a moment (it commits or lets go): look again shortly.
          state.again = true;
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      } while (state.again && !this.stopped);
      this.dispatching.delete(hostId);
    })();
  }

  /** Retries owed bookkeeping now (a replica that could not settle a job asked, or a tick); one pass at a time. */
  private settleSoon(): void {
    if (this.stopped) return;
    if (this.settling) {
      this.settleAgain = true;
      return;
    }
    this.settling = (async () => {
      do {
        this.settleAgain = false;
        await this.settle().catch((error) => this.log.warn({ err: error }, 'settling ended jobs failed'));
      } while (this.settleAgain && !this.stopped);
      this.settling = undefined;
    })();
  }

  /** Settles ended jobs whose bookkeeping is still owed (it failed, or was left by a process that does not run it). */
  private async settle(): Promise<void> {
    for (let done = 0; done < SETTLE_BATCH && !this.stopped; done++) {
      if (!(await this.lifecycle.settleNext(this.em()))) return;
    }
  }

  private wakeAll(): void {
    for (const hostId of this.hosts.keys()) this.wake(hostId);
  }

  private async tick(): Promise<void> {
    try {
      const released = await this.lifecycle.releaseExpired(this.em(), this.graceSeconds);
      for (const job of released)
        this.log.warn({ jobId: job.id, status: job.status }, 'released a job whose host was lost');
    } catch (error) {
      this.log.warn({ err: error }, 'releasing lost jobs failed');
    }
    this.settleSoon();
    this.wakeAll();
  }

  /** Tells the job's host to stop it, when that host is connected here; after the kind's grace when it has one. */
  private async forwardCancel(jobId: string, graceOver = false): Promise<void> {
    const row = await runningHostJob(this.em(), jobId);
    const host = row?.host_id ? this.hosts.get(row.host_id) : undefined;
    if (!host) return;
    const grace = this.kinds[row!.kind]?.cancelGraceSeconds;
    if (grace && !graceOver) {
      setTimeout(
        () =>
          void this.forwardCancel(jobId, true).catch((error) =>
            this.log.warn({ err: error, jobId }, 'forwarding a cancel failed'),
          ),
        grace * 1000,
      ).unref();
      return;
    }
    host.send({ type: 'job.cancel', jobId, reason: 'cancelled by a user' });
  }

  /**
   * Takes what fits on the host in one transaction, then sends the assignments once they are committed. True when a
   * job it chose was taken or locked by another dispatch meanwhile, so the host should look again.
   */
  private async dispatch(host: LocalHost): Promise<boolean> {
    const kinds = Object.keys(this.kinds);
    let missed = false;
    const assignments = await this.em().transactional(async (em) => {
      // A socket another session took the host over from gets nothing: its agent is not the host any more.
      if (!(await host.holdsHost(em))) return [];
      const busy = await runningJobsOnHost(em, host.hostId);
      const queue = await queuedHostJobs(em, kinds, host.workspaceId, QUEUE_WINDOW);
      const placements = placeJobs(
        {
          gpus: host.hardware.gpus,
          memoryBytes: host.hardware.memoryBytes,
          busyGpuIndexes: new Set(busy.flatMap((job) => job.gpu_indexes ?? [])),
          runningJobs: busy.length,
          cpuSlotBusy: busy.some((job) => job.gpu_count === 0 && !job.service),
          maxConcurrentJobs: host.maxConcurrentJobs,
          exporters: host.exporters,
          region: host.region,
          services: host.services,
        },
        queue.map((row): QueuedJob => ({
          id: row.id,
          gpuType: row.gpu_type,
          gpuCount: row.gpu_count,
          memoryBytes: row.memory_bytes === null ? null : Number(row.memory_bytes),
          toolchain: row.toolchain,
          region: row.region,
          service: row.service,
        })),
      );
      const rows = new Map(queue.map((row) => [row.id, row]));
      // Only the jobs this host takes are locked: a host that cannot run a job must not hide it from one that can (a
      // locked row is skipped, and the host that skipped it would wait for the next tick). Taken meanwhile: try again.
      const locked = placements.length
        ? new Set(
            await lockQueuedJobs(
              em,
              placements.map((placement) => placement.jobId),
            ),
          )
        : new Set<string>();
      const messages: ServerMessage[] = [];
      for (const placement of placements) {
        if (!locked.has(placement.jobId)) {
          missed = true;
          continue;
        }
        const row = rows.get(placement.jobId)!;
        const attempt = attemptOf({ ...row, attempts: row.attempts + 1 }, host.hostId, placement.gpuIndexes);
        const spec = await this.spec(em, attempt);
        if (typeof spec === 'string') {
          await this.lifecycle.failUnprepared(em, row.id, spec);
          continue;
        }
        await this.lifecycle.assign(em, row.id, host.hostId, placement.gpuIndexes, this.graceSeconds);
        messages.push({ type: 'job.assign', jobId: row.id, attempt: attempt.attempt, spec });
      }
      return messages;
    });
    // A host that dropped meanwhile never gets these; when it reconnects without them they are requeued.
    for (const message of assignments) {
      this.log.info(
        { jobId: message.type === 'job.assign' ? message.jobId : undefined, hostId: host.hostId },
        'job assigned',
      );
      host.send(message);
    }
    return missed;
  }

  /** The attempt's spec with the assigned GPUs, or the reason it cannot run. */
  private async spec(em: EntityManager, attempt: HostJobAttempt): Promise<JobSpec | string> {
    try {
      const spec = {
        ...(await this.kinds[attempt.kind].spec(em, attempt)),
        gpus: { count: attempt.gpuIndexes.length, indexes: attempt.gpuIndexes },
      };
      // The agent refuses a spec beyond the protocol's limits and the job would stay running: fail it here instead.
      const checked = JobSpec.safeParse(spec);
      if (checked.success) return spec;
      const problems = checked.error.issues.slice(0, 3).map((issue) => `${issue.path.join('.')}: ${issue.message}`);
      return `The job could not be prepared: its command breaks the worker protocol's limits (${problems.join('; ')})`;
    } catch (error) {
      if (error instanceof JobFailure) return error.message;
      this.log.error({ err: error, jobId: attempt.id }, 'building a job spec failed');
      return 'The job could not be prepared because of an internal error; see the control-plane log';
    }
  }
}

function attemptOf(row: QueuedRow, hostId: string, gpuIndexes: number[]): HostJobAttempt {
  return {
    id: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    subjectId: row.subject_id,
    payload: row.payload,
    attempt: row.attempts,
    hostId,
    gpuIndexes,
  };
}
