import type { QueuedJob } from './placement.ts';

/**
 * How long a GPU job that other hosts here could run too is passed over for want of room before a host holds its free
 * GPUs back for it. Such a job mostly finds a host with room by then (a job of its size ended there): holding GPUs for
 * it would be idle time for nothing, as another host takes it and the holder is let go (the fleet bench's slowest
 * placements, issue 39). A small job may start before it meanwhile; as other hosts could run it, that delays it by this
 * much at most before a holder is chosen. A job only one host here could run is held for at once: a small job started
 * first there could hold it up for as long as that job runs.
 */
export const HOLD_AFTER_MS = 10_000;
/** A job no dispatch found short of room for this long has left the queue (or found it): its clock is dropped. */
const FORGET_AFTER_MS = 60_000;

/**
 * The GPU jobs this replica's hosts wait for. A host whose GPUs could run a queued job once more of them are free holds
 * back its later GPU jobs meanwhile (placement.ts), so a stream of small jobs cannot starve a big one. At a fleet's scale
 * one such host per GPU type (a job's; any type is one too) is enough: it keeps waiting until its job leaves the queue,
 * and the other hosts take a job that fits them at once and pass over one that does not, rather than every host of the
 * type idling its free GPUs for the jobs at the head of the queue.
 */
export class GpuWaits {
  /** By the job's GPU type ('' for any type): the job waited for and the host that waits. */
  private readonly byType = new Map<string, { jobId: string; hostId: string }>();
  /** By job: since when (epoch ms) hosts here have found it short of room, and when one last did. */
  private readonly shortOfRoom = new Map<string, { since: number; seen: number }>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /**
   * Whether the host may hold its GPUs back for `job`, which it could run once more of them are free: it does already,
   * or no job of its GPU type is waited for and either no other host here could run the job (nothing else would make
   * room for it) or the job has been short of room for HOLD_AFTER_MS.
   */
  mayWait(hostId: string, job: QueuedJob, othersCouldRun: boolean): boolean {
    const wait = this.byType.get(job.gpuType ?? '');
    if (wait) return wait.jobId === job.id && wait.hostId === hostId;
    if (!othersCouldRun) return true;
    const now = this.now();
    const clock = this.shortOfRoom.get(job.id) ?? { since: now, seen: now };
    clock.seen = now;
    this.shortOfRoom.set(job.id, clock);
    return now - clock.since >= HOLD_AFTER_MS;
  }

  /** The host waits for `job` now (undefined: for none). */
  set(hostId: string, job: QueuedJob | undefined): void {
    for (const [type, wait] of this.byType)
      if (wait.hostId === hostId && wait.jobId !== job?.id) this.byType.delete(type);
    if (job && !this.byType.has(job.gpuType ?? '')) this.byType.set(job.gpuType ?? '', { jobId: job.id, hostId });
  }

  /** Jobs that left the queue, or a host that left: waited for, or waiting, no more. */
  forget(match: { jobIds?: ReadonlySet<string>; hostId?: string }): void {
    for (const [type, wait] of this.byType)
      if (match.jobIds?.has(wait.jobId) || wait.hostId === match.hostId) this.byType.delete(type);
    for (const jobId of match.jobIds ?? []) this.shortOfRoom.delete(jobId);
  }

  /** Drops the clocks of jobs no host looked at lately (taken by another replica's host, cancelled). */
  prune(): void {
    const before = this.now() - FORGET_AFTER_MS;
    for (const [jobId, clock] of this.shortOfRoom) if (clock.seen < before) this.shortOfRoom.delete(jobId);
  }
}
