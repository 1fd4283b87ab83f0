import type { EntityManager } from '@mikro-orm/postgresql';
import { JobSpec, type Hardware, type ServerMessage } from '@vp/protocol';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import type { Orm } from '../db/orm.ts';
import type { JobLifecycle } from '../jobs/job-lifecycle.ts';
import { JOB_CANCEL_CHANNEL, JOBS_CHANNEL, REQUEUED_HOST_JOBS, SETTLE_JOBS } from '../jobs/job-queue.ts';
import { JobFailure } from '../jobs/job-runner.ts';
import {
  cancelledHostJobs,
  lockQueuedJobs,
  queuedHostJobs,
  runningHostJob,
  runningJobsOnHosts,
  type LockedQueuedJob,
  type QueuedHostJobRow,
  type QueueRead,
} from '../jobs/job.store.ts';
import { currentSessions, type HostSession } from '../workers/host.store.ts';
import { GpuWaits } from './gpu-waits.ts';
import type { HostJobAttempt, HostJobKind } from './host-job-kinds.ts';
import {
  canEverRun,
  placeJobsWaiting,
  type HostCapacity,
  type HostHardware,
  type Placement,
  type QueuedJob,
} from './placement.ts';

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
  /** This socket as the host's session: it gets jobs only while it is the host's current one (currentSessions). */
  session: HostSession;
  send(message: ServerMessage): void;
}

const POLL_MS = 5000;
/**
 * How often every host is offered the queue again between wakes: a host that let a bigger job go first (placement.ts)
 * hears of nothing when another host takes that job, and looks again at the next sweep.
 */
const SWEEP_MS = 1000;
/** How soon a host looks again at a job another dispatch held when it wanted it. */
const RETRY_MS = 50;
/**
 * Hosts offered jobs in one dispatch (one transaction): more wait for the next, so a dispatch commits (and lets go of
 * the jobs it holds, which other replicas' dispatches skip meanwhile) within a few hundred assignments.
 */
const DISPATCH_HOSTS = 250;
/** Times a dispatch places its hosts again, from the same read, after jobs it chose were taken by another meanwhile. */
const LOCK_ROUNDS = 3;
/** How long a host that could not start a job is not offered it again: another host gets the chance first. */
const NOT_STARTED_AVOID_MS = 30_000;
/** Ended jobs settled in one go before giving the event loop back. */
const SETTLE_BATCH = 100;
/** Queued jobs of each kind of slot a dispatch looks at, beyond one per free slot of its hosts. */
const QUEUE_WINDOW = 200;

type QueuedRow = QueuedHostJobRow;

/**
 * Assigns queued host jobs to the worker hosts connected to this process. State lives in PostgreSQL, so any
 * number of replicas run one each: a job queued through any replica wakes them all (NOTIFY), each offers it to
 * its own hosts, and FOR UPDATE SKIP LOCKED lets exactly one take it. Jobs whose host stopped heartbeating for
 * the grace period are released by whichever replica looks first. The hosts woken meanwhile are served together, one
 * dispatch (a transaction that reads their running jobs and the queue once) at a time: a queued job costs each replica
 * one dispatch, not one per host (issue 39: 500 hosts' dispatches per queued batch held the queue up for seconds).
 */
export class HostScheduler {
  private readonly hosts = new Map<string, LocalHost>();
  /** Hosts woken since the running dispatch read the queue, in the order they were woken. */
  private readonly pending = new Set<string>();
  private readonly waits = new GpuWaits();
  /** `hostId jobId` → until when (epoch ms) the host is not offered the job it could not start. */
  private readonly notStarted = new Map<string, number>();
  private dispatching: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
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
    // A cancel requested while the LISTEN connection was down was never forwarded: its host would serve on.
    notifications.onReconnect(() => {
      this.wakeAll();
      void this.forwardMissedCancels().catch((error) => this.log.warn({ err: error }, 'forwarding cancels failed'));
    });
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), POLL_MS);
    this.timer.unref();
    this.sweepTimer = setInterval(() => this.wakeAll(), SWEEP_MS);
    this.sweepTimer.unref();
  }

  /** Stops taking work and waits for dispatches and bookkeeping in progress (before the pool closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearInterval(this.sweepTimer);
    await Promise.all([this.dispatching, this.settling]);
  }

  attach(host: LocalHost): void {
    this.hosts.set(host.hostId, host);
    this.wake(host.hostId);
  }

  detach(hostId: string, host: LocalHost): void {
    if (this.hosts.get(hostId) !== host) return;
    this.hosts.delete(hostId);
    this.waits.forget({ hostId });
  }

  wake(hostId: string): void {
    if (this.stopped || !this.hosts.has(hostId)) return;
    this.pending.add(hostId);
    this.dispatchSoon();
  }

  /** Dispatches until no host waits, one dispatch at a time; a host woken during one is served by the next. */
  private dispatchSoon(): void {
    if (this.dispatching) return;
    this.dispatching = (async () => {
      while (this.pending.size > 0 && !this.stopped) {
        const hosts: LocalHost[] = [];
        for (const hostId of this.pending) {
          if (hosts.length === DISPATCH_HOSTS) break;
          this.pending.delete(hostId);
          const host = this.hosts.get(hostId);
          if (host) hosts.push(host);
        }
        const missed = await this.dispatch(hosts).catch((error) => {
          this.log.warn({ err: error, hosts: hosts.length }, 'dispatching jobs failed');
          return [];
        });
        if (missed.length > 0) {
          // Another dispatch holds a job they wanted for a moment (it commits or lets go): they look again shortly.
          for (const host of missed) this.pending.add(host.hostId);
          await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        }
      }
      this.dispatching = undefined;
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

  /** The host could not start the job, which went back to the queue: the other hosts are offered it first. */
  couldNotStart(hostId: string, jobId: string): void {
    this.notStarted.set(`${hostId} ${jobId}`, Date.now() + NOT_STARTED_AVOID_MS);
  }

  private avoids(hostId: string, jobId: string): boolean {
    // Asked for every queued job each host looks at: mostly none is avoided, and building the key costs.
    if (this.notStarted.size === 0) return false;
    const until = this.notStarted.get(`${hostId} ${jobId}`);
    return until !== undefined && until > Date.now();
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
    for (const [key, until] of this.notStarted) if (until <= Date.now()) this.notStarted.delete(key);
    this.waits.prune();
    this.wakeAll();
  }

  /** Forwards the cancels of every job running on a host connected here whose cancel was requested. */
  private async forwardMissedCancels(): Promise<void> {
    for (const jobId of await cancelledHostJobs(this.em(), [...this.hosts.keys()])) await this.forwardCancel(jobId);
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
   * Takes what fits on each of the hosts in one transaction (their running jobs and the queue read once), host after
   * host in the order they were woken, then sends the assignments once they are committed. A job another dispatch (of
   * another replica) took or holds meanwhile is passed over and its host placed again from the same read, up to
   * LOCK_ROUNDS times; answers the hosts still short of a job they wanted then: they should look again.
   */
  private async dispatch(hosts: LocalHost[]): Promise<LocalHost[]> {
    if (hosts.length === 0) return [];
    const kinds = Object.keys(this.kinds);
    let wanting: Array<{ host: LocalHost; capacity: HostCapacity }> = [];
    const assignments = await this.em().transactional(async (em) => {
      const running = await runningJobsOnHosts(
        em,
        hosts.map((host) => host.hostId),
      );
      const open = hosts
        .map((host) => ({ host, capacity: capacityOf(host, running) }))
        .filter(({ capacity }) => hasRoom(capacity));
      if (open.length === 0) return [];
      const queue = await queuedHostJobs(em, kinds, queueReads(open));
      if (queue.length === 0) return [];
      const rows = new Map(queue.map((row) => [row.id, row]));
      const queued = queue.map((row) => ({ row, job: queuedJob(row) }));
      // A socket another session took its host over from gets nothing: its agent is not the host any more. The hosts
      // that are stay so (no takeover lands) until this commits.
      const held = await currentSessions(
        em,
        open.map(({ host }) => host.session),
      );
      /** The hosts here that could run a job once their GPUs are free: by job, counted when first asked. */
      const able = new Map<string, number>();
      const ableHosts = (row: QueuedRow, job: QueuedJob) => {
        let count = able.get(row.id);
        if (count === undefined) {
          count = 0;
          for (const other of this.hosts.values())
            if (servesWorkspaceOf(other, row) && canEverRun(hardwareOf(other), job)) count++;
          able.set(row.id, count);
        }
        return count;
      };
      /** The jobs this dispatch locked, with what their attempts run. */
      const locked = new Map<string, LockedQueuedJob>();
      /** Locked by this dispatch, or passed over: another has it. */
      const taken = new Set<string>();
      const passedOver = new Set<string>();
      const placed: Array<{ host: LocalHost; placement: Placement }> = [];
      // Hosts with the most free GPUs first: a job none can run yet waits on the one likeliest to have room soonest.
      wanting = open
        .filter(({ host }) => held.has(host.session.sessionId))
        .sort((a, b) => freeGpus(b.capacity) - freeGpus(a.capacity));
      for (let round = 0; round < LOCK_ROUNDS && wanting.length > 0; round++) {
        const chosen: Array<{ entry: (typeof open)[number]; placements: Placement[] }> = [];
        const wanted = new Set<string>();
        for (const entry of wanting) {
          const { host } = entry;
          const mayTake = ({ row }: { row: QueuedRow }) =>
            !taken.has(row.id) &&
            !passedOver.has(row.id) &&
            !wanted.has(row.id) &&
            !this.avoids(host.hostId, row.id) &&
            servesWorkspaceOf(host, row);
          const { placements, waitingFor } = placeJobsWaiting(
            entry.capacity,
            queued.filter(mayTake).map(({ job }) => job),
            (job) => this.waits.mayWait(host.hostId, job, ableHosts(rows.get(job.id)!, job) > 1),
          );
          this.waits.set(host.hostId, waitingFor);
          if (placements.length === 0) continue;
          for (const placement of placements) wanted.add(placement.jobId);
          chosen.push({ entry, placements });
        }
        if (wanted.size === 0) {
          wanting = [];
          break;
        }
        // Only the jobs the hosts take are locked: a host that cannot run a job must not hide it from one that can (a
        // locked row is skipped, and the host that skipped it would wait for the next tick).
        for (const job of await lockQueuedJobs(em, [...wanted])) locked.set(job.id, job);
        wanting = [];
        for (const { entry, placements } of chosen) {
          const got = placements.filter((placement) => locked.has(placement.jobId));
          for (const placement of placements) (locked.has(placement.jobId) ? taken : passedOver).add(placement.jobId);
          for (const placement of got) placed.push({ host: entry.host, placement });
          entry.capacity = withPlacements(entry.capacity, got, rows);
          if (got.length < placements.length) wanting.push(entry);
        }
      }
      // A job taken is waited for no more (one another replica took: once its waiter is placed again without it).
      this.waits.forget({ jobIds: taken });
      const messages: Array<{ host: LocalHost; message: ServerMessage }> = [];
      const assigned: Array<{ jobId: string; hostId: string; gpuIndexes: number[] }> = [];
      for (const { host, placement } of placed) {
        const row = rows.get(placement.jobId)!;
        const attempt = attemptOf(row, locked.get(row.id)!, host.hostId, placement.gpuIndexes);
        const spec = await this.spec(em, attempt);
        if (typeof spec === 'string') {
          await this.lifecycle.failUnprepared(em, row.id, spec);
          continue;
        }
        assigned.push({ jobId: row.id, hostId: host.hostId, gpuIndexes: placement.gpuIndexes });
        messages.push({ host, message: { type: 'job.assign', jobId: row.id, attempt: attempt.attempt, spec } });
      }
      await this.lifecycle.assignAll(em, assigned, this.graceSeconds);
      return messages;
    });
    // A host that dropped meanwhile never gets these; when it reconnects without them they are requeued.
    for (const { host, message } of assignments) {
      this.log.info(
        { jobId: message.type === 'job.assign' ? message.jobId : undefined, hostId: host.hostId },
        'job assigned',
      );
      host.send(message);
    }
    return wanting.map(({ host }) => host);
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

/** The host's capacity once `placements` (of `rows`) run there too. */
function withPlacements(capacity: HostCapacity, placements: Placement[], rows: Map<string, QueuedRow>): HostCapacity {
  if (placements.length === 0) return capacity;
  return {
    ...capacity,
    busyGpuIndexes: new Set([...capacity.busyGpuIndexes, ...placements.flatMap((placement) => placement.gpuIndexes)]),
    runningJobs: capacity.runningJobs + placements.length,
    cpuSlotBusy:
      capacity.cpuSlotBusy ||
      placements.some((placement) => placement.gpuIndexes.length === 0 && !rows.get(placement.jobId)?.service),
  };
}

/** A host of a workspace runs only its jobs; the appliance-wide pool runs every workspace's. */
const servesWorkspaceOf = (host: LocalHost, row: QueuedRow) =>
  host.workspaceId === null || row.workspace_id === host.workspaceId;

/** What the host offers whatever runs there. */
function hardwareOf(host: LocalHost): HostHardware {
  return {
    gpus: host.hardware.gpus,
    memoryBytes: host.hardware.memoryBytes,
    exporters: host.exporters,
    region: host.region,
    services: host.services,
  };
}

/** What the host can take now, given the jobs running on the hosts of a dispatch. */
function capacityOf(
  host: LocalHost,
  running: Array<{ host_id: string; gpu_indexes: number[] | null; gpu_count: number; service: string | null }>,
): HostCapacity {
  const busy = running.filter((job) => job.host_id === host.hostId);
  return {
    ...hardwareOf(host),
    busyGpuIndexes: new Set(busy.flatMap((job) => job.gpu_indexes ?? [])),
    runningJobs: busy.length,
    cpuSlotBusy: busy.some((job) => job.gpu_count === 0 && !job.service),
    maxConcurrentJobs: host.maxConcurrentJobs,
  };
}

const freeGpus = (capacity: HostCapacity) =>
  capacity.gpus.filter((gpu) => !capacity.busyGpuIndexes.has(gpu.index)).length;
/** A job without GPUs could start: the CPU slot is free, or the host runs services (which take no slot). */
const takesCpuJobs = (capacity: HostCapacity) => !capacity.cpuSlotBusy || capacity.services.size > 0;

/** Whether placeJobs could give the host anything: below its cap, with a free GPU, a free CPU slot or a service it runs. */
function hasRoom(capacity: HostCapacity): boolean {
  if (capacity.maxConcurrentJobs !== undefined && capacity.runningJobs >= capacity.maxConcurrentJobs) return false;
  return freeGpus(capacity) > 0 || takesCpuJobs(capacity);
}

/**
 * The looks at the queue a dispatch takes for its hosts: per workspace, one at the jobs needing no GPU and one per set of
 * GPU types at the jobs needing GPUs of them, so a backlog of jobs waiting for one kind of slot (the first in line, which
 * no host can run yet) does not hide those another could start now. Each sees QUEUE_WINDOW jobs beyond those the hosts
 * before it may take (at most one per free slot).
 */
function queueReads(open: Array<{ host: LocalHost; capacity: HostCapacity }>): QueueRead[] {
  const reads = new Map<string, QueueRead>();
  const add = (workspaceId: string | null, gpuTypes: string[] | null, slots: number) => {
    const key = JSON.stringify([workspaceId, gpuTypes]);
    const read = reads.get(key) ?? { workspaceId, gpuTypes, window: QUEUE_WINDOW };
    read.window += slots;
    reads.set(key, read);
  };
  for (const { host, capacity } of open) {
    if (takesCpuJobs(capacity)) add(host.workspaceId, null, 1);
    const gpus = freeGpus(capacity);
    if (gpus > 0) add(host.workspaceId, [...new Set(capacity.gpus.map((gpu) => gpu.typeId))].sort(), gpus);
  }
  return [...reads.values()];
}

function queuedJob(row: QueuedRow): QueuedJob {
  return {
    id: row.id,
    gpuType: row.gpu_type,
    gpuCount: row.gpu_count,
    memoryBytes: row.memory_bytes === null ? null : Number(row.memory_bytes),
    toolchain: row.toolchain,
    region: row.region,
    service: row.service,
  };
}

/** The attempt a host is assigned: the queued job's next. */
function attemptOf(row: QueuedRow, job: LockedQueuedJob, hostId: string, gpuIndexes: number[]): HostJobAttempt {
  return {
    id: row.id,
    kind: row.kind,
    workspaceId: row.workspace_id,
    subjectId: job.subject_id,
    payload: job.payload,
    attempt: job.attempts + 1,
    hostId,
    gpuIndexes,
  };
}
