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
import { hostFigures } from '../workers/host.store.ts';
import type { ScrapeGauges } from './app-metrics.ts';
import { hostSeriesText } from './host-series.ts';

/** Storage totals sum a whole table: read at most this often. */
const STORAGE_REFRESH_MS = 5 * 60_000;

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

  /**
   * Sets every gauge from what is true now (label sets that went away are dropped); answers the hosts' series as text
   * (host-series.ts), to follow the registry's.
   */
  async refresh(em: EntityManager): Promise<string> {
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
    return hostSeriesText(hosts);
  }

  private async storageTotals(em: EntityManager): Promise<Array<{ kind: string; bytes: string }>> {
    if (!this.storage || Date.now() - this.storage.at > STORAGE_REFRESH_MS)
      this.storage = { at: Date.now(), rows: await storedTotalsAllWorkspaces(em) };
    return this.storage.rows;
  }
}
