import { Migration } from '@mikro-orm/migrations';

export class Migration20261123013707_host_job_accounting extends Migration {
  override name = 'Migration20261123013707_host_job_accounting';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "jobs" add "memory_bytes" bigint null, add "run_seconds" double precision not null default 0, add "settle_pending" boolean not null default false;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "jobs" drop column "memory_bytes", drop column "run_seconds", drop column "settle_pending";`,
    );
  }
}
