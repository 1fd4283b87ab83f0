import { Migration } from '@mikro-orm/migrations';

export class Migration20261210000000_jobs_queue_order extends Migration {
  override name = 'Migration20261210000000_jobs_queue_order';

  override up(): void | Promise<void> {
    // The queue in the scheduler's order (job.store.ts queuedHostJobs: priority, then age): each dispatch reads its first
    // jobs from here instead of sorting every queued job (10,000 queued: 10 ms a read, issue 39's fleet bench). Partial,
    // so it holds only what is waiting, never the table's history.
    this.addSql(
      `create index "jobs_queued_host_order" on "jobs" ("priority" desc, "created_at", "id") where "status" = 'queued' and "placement" = 'host';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "jobs_queued_host_order";`);
  }
}
