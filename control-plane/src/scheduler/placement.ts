// Which queued jobs one host takes now: a pure function of its capacity and the queue, so the rule is tested
// without sockets or a database.

export interface HostCapacity {
  gpus: ReadonlyArray<{ index: number; typeId: string }>;
  /** The host's memory, for jobs that need a minimum. */
  memoryBytes: number;
  /** GPU indexes held by the host's running jobs. */
  busyGpuIndexes: ReadonlySet<number>;
  /** Jobs the host runs now, GPU and CPU together. */
  runningJobs: number;
  /** Whether a CPU job (no GPU, no service) runs there now: each host offers one CPU slot. */
  cpuSlotBusy: boolean;
  /** The agent's own cap; undefined: no cap beyond GPUs and the CPU slot. */
  maxConcurrentJobs: number | undefined;
  /** The model formats the host's trainer environment exports to (its `capabilities`; none before they came). */
  exporters: ReadonlySet<string>;
  /** The deployment region it serves; null: every region. */
  region: string | null;
  /** The services it runs (its `capabilities`; none before they came). */
  services: ReadonlySet<string>;
}

export interface QueuedJob {
  id: string;
  /** null: any GPU type. Ignored when gpuCount is 0. */
  gpuType: string | null;
  gpuCount: number;
  /** The host memory it needs, if it said. */
  memoryBytes?: number | null;
  /** The export format whose toolchain it needs; null: none. */
  toolchain?: string | null;
  /** The deployment region it must run in; null: any. */
  region?: string | null;
  /** The service it runs (a deployment's inference server); null: a job that ends by itself. */
  service?: string | null;
}

export interface Placement {
  jobId: string;
  /** Empty for a CPU job. */
  gpuIndexes: number[];
}

/**
 * Walks the queue in its order (priority, then age) and takes every job that fits. A job this host could run
 * but not yet (its GPUs are busy) stops later jobs needing the same kind of slot from overtaking it, so a big
 * job is not starved by a stream of small ones; jobs this host can never run (GPU type or count, memory, an export
 * toolchain it does not report, a service or region it does not serve) are left to other hosts. A CPU service (a
 * deployment's server) never ends by itself, so it takes no CPU slot: it would hold it for good; its own CPU and
 * memory limits bound it, and the agent's cap bounds how many a host runs.
 */
export function placeJobs(capacity: HostCapacity, queue: readonly QueuedJob[]): Placement[] {
  return placeJobsWaiting(capacity, queue).placements;
}

/**
 * placeJobs, and the job the host's GPUs wait for, if one held its later GPU jobs back (the first it could run, not yet).
 * `mayWaitFor` is asked about that first job only; when it refuses (another host waits for one like it, or the job has
 * not been short of room for long), the host passes over every job it cannot run yet and takes those that fit now.
 */
export function placeJobsWaiting(
  capacity: HostCapacity,
  queue: readonly QueuedJob[],
  mayWaitFor: (job: QueuedJob) => boolean = () => true,
): { placements: Placement[]; waitingFor?: QueuedJob } {
  let waitingFor: QueuedJob | undefined;
  const free = capacity.gpus.filter((gpu) => !capacity.busyGpuIndexes.has(gpu.index));
  let cpuSlotBusy = capacity.cpuSlotBusy;
  let running = capacity.runningJobs;
  let gpuQueueBlocked = false;
  let askedToWait = false;
  const placements: Placement[] = [];
  for (const job of queue) {
    if (capacity.maxConcurrentJobs !== undefined && running >= capacity.maxConcurrentJobs) break;
    if (!canEverRun(capacity, job)) continue;
    if (job.gpuCount === 0 && job.service) {
      placements.push({ jobId: job.id, gpuIndexes: [] });
      running++;
      continue;
    }
    if (job.gpuCount === 0) {
      if (cpuSlotBusy) continue;
      cpuSlotBusy = true;
      placements.push({ jobId: job.id, gpuIndexes: [] });
      running++;
      continue;
    }
    if (gpuQueueBlocked) continue;
    const chosen = free.filter((gpu) => matchesType(gpu, job)).slice(0, job.gpuCount);
    if (chosen.length < job.gpuCount) {
      // Only the first job short of GPUs is the host's to wait for: the later ones are not at the front of its line.
      if (askedToWait) continue;
      askedToWait = true;
      if (!mayWaitFor(job)) continue;
      gpuQueueBlocked = true;
      waitingFor = job;
      continue;
    }
    for (const gpu of chosen) free.splice(free.indexOf(gpu), 1);
    placements.push({ jobId: job.id, gpuIndexes: chosen.map((gpu) => gpu.index).sort((a, b) => a - b) });
    running++;
  }
  return { placements, waitingFor };
}

/** The capacity a host has whatever runs there. */
export type HostHardware = Pick<HostCapacity, 'gpus' | 'memoryBytes' | 'exporters' | 'region' | 'services'>;

/** Whether the host could run the job once nothing else runs there (its GPUs, memory, toolchains, region, services). */
export function canEverRun(host: HostHardware, job: QueuedJob): boolean {
  if (job.memoryBytes && job.memoryBytes > host.memoryBytes) return false;
  if (job.toolchain && !host.exporters.has(job.toolchain)) return false;
  if (job.region && host.region && job.region !== host.region) return false;
  if (job.service && !host.services.has(job.service)) return false;
  return job.gpuCount === 0 || host.gpus.filter((gpu) => matchesType(gpu, job)).length >= job.gpuCount;
}

const matchesType = (gpu: { typeId: string }, job: QueuedJob) => job.gpuType === null || gpu.typeId === job.gpuType;
