// What a scrape reads from the database and the process: the queue, hosts and their GPUs, deployments, storage,
// backups and the connection pool. Every replica reports the same database figures (aggregate them with max()).
import { statfs } from 'node:fs/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import { lastCompleteBackup } from '../backup/backup-run.store.ts';
import { DEPLOYMENT_STATUSES } from '../deployments/deployment.schemas.ts';
import { deploymentStatusCounts } from '../deployments/deployment.store.ts';
import { STORED_OBJECT_KINDS } from '../storage/stored-object.entity.ts';
import { activeJobCounts, queuedJobAges } from '../jobs/job.store.ts';
import { storedTotalsAllWorkspaces } from '../storage/stored-object.store.ts';
import { hostFigures, type HostFigures } from '../workers/host.store.ts';
import type { ScrapeGauges } from './app-metrics.ts';

/** Storage totals sum a whole table: read at most this often. */
const STORAGE_REFRESH_MS = 5 * 60_000;

const numberOr = (value: unknown, otherwise: number | null = null) =>
  typeof value === 'number' && Number.isFinite(value) ? value : otherwise;
const entries = (value: unknown): Array<Record<string, unknown>> =>
  Array.isArray(value)
    ? value.filter((entry): entry is Record<string, unknown> => !!entry && typeof entry === 'object')
    : [];

interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

export class ScrapeFigures {
  private storage: { at: number; rows: Array<{ kind: string; bytes: string }> } | undefined;

  private readonly gauges: ScrapeGauges;
  private readonly graceSeconds: number;
  private readonly dataDir: string;
  private readonly pool: () => Promise<PoolCounts | undefined>;

  /** `pool`: the connection pool's counts (pg's Pool), read at each scrape. */
  constructor(
    gauges: ScrapeGauges,
    options: { graceSeconds: number; dataDir: string; pool: () => Promise<PoolCounts | undefined> },
  ) {
    this.gauges = gauges;
    this.graceSeconds = options.graceSeconds;
    this.dataDir = options.dataDir;
    this.pool = options.pool;
  }

  /** Sets every gauge from what is true now (label sets that went away are dropped). */
  async refresh(em: EntityManager): Promise<void> {
    const [jobs, queued, hosts, deployments, backup, storage, pool, disk] = await Promise.all([
      activeJobCounts(em),
      queuedJobAges(em),
      hostFigures(em, this.graceSeconds),
      deploymentStatusCounts(em),
      lastCompleteBackup(em),
      this.storageTotals(em),
      this.pool(),
      statfs(this.dataDir).catch(() => undefined),
    ]);
    const g = this.gauges;
    for (const gauge of Object.values(g)) gauge.reset();
    for (const row of jobs) g.jobs.set({ kind: row.kind, status: row.status }, row.n);
    for (const row of queued) {
      const labels = { kind: row.kind, gpu_type: row.gpu_type ?? 'none' };
      g.queued.set(labels, row.n);
      g.queuedSeconds.set(labels, row.oldest_seconds);
    }
    this.setHosts(hosts);
    for (const status of DEPLOYMENT_STATUSES) g.deployments.set({ status }, 0);
    for (const row of deployments) g.deployments.set({ status: row.status }, row.n);
    for (const kind of STORED_OBJECT_KINDS) g.storedBytes.set({ kind }, 0);
    for (const row of storage) g.storedBytes.set({ kind: row.kind }, Number(row.bytes));
    g.backupAge.set(backup ? backup.getTime() / 1000 : 0);
    if (disk) {
      g.diskFree.set(disk.bavail * disk.bsize);
      g.diskSize.set(disk.blocks * disk.bsize);
    }
    if (pool) {
      g.dbPool.set({ state: 'idle' }, pool.idleCount);
      g.dbPool.set({ state: 'busy' }, pool.totalCount - pool.idleCount);
      g.dbPool.set({ state: 'waiting' }, pool.waitingCount);
    }
  }

  private setHosts(hosts: HostFigures[]): void {
    const g = this.gauges;
    const states = { connected: 0, offline: 0, enrolling: 0 };
    for (const row of hosts) {
      const host = row.host;
      const state = row.state === 'enrolling' ? 'enrolling' : row.alive ? 'connected' : 'offline';
      states[state] += 1;
      if (state === 'enrolling') continue;
      g.hostUp.set({ host }, row.alive ? 1 : 0);
      g.hostJobs.set({ host }, row.running);
      if (row.agent_version) g.agents.set({ host, version: row.agent_version }, 1);
      const load = row.alive ? row.load : null;
      const cpu = numberOr(load?.cpuPercent);
      if (cpu !== null) g.hostCpu.set({ host }, cpu / 100);
      const memory = numberOr(load?.memoryUsedBytes);
      if (memory !== null) g.hostMemory.set({ host }, memory);
      const used = new Map(entries(load?.gpus).map((gpu) => [gpu.index, gpu]));
      entries(row.gpus).forEach((gpu, position) => {
        const index = numberOr(gpu.index, position)!;
        const labels = { host, gpu: String(index) };
        g.gpuMemoryTotal.set(
          { ...labels, model: typeof gpu.model === 'string' ? gpu.model : 'unknown' },
          numberOr(gpu.memoryMiB, 0)! * 2 ** 20,
        );
        const now = used.get(index);
        const utilization = numberOr(now?.utilizationPercent);
        if (utilization !== null) g.gpuUtilization.set(labels, utilization / 100);
        const memoryUsed = numberOr(now?.memoryUsedMiB);
        if (memoryUsed !== null) g.gpuMemoryUsed.set(labels, memoryUsed * 2 ** 20);
        const temperature = numberOr(now?.temperatureC);
        if (temperature !== null) g.gpuTemperature.set(labels, temperature);
      });
    }
    for (const [state, n] of Object.entries(states)) g.hosts.set({ state }, n);
  }

  private async storageTotals(em: EntityManager): Promise<Array<{ kind: string; bytes: string }>> {
    if (!this.storage || Date.now() - this.storage.at > STORAGE_REFRESH_MS)
      this.storage = { at: Date.now(), rows: await storedTotalsAllWorkspaces(em) };
    return this.storage.rows;
  }
}
