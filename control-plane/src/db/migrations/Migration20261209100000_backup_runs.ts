import { Migration } from '@mikro-orm/migrations';

export class Migration20261209100000_backup_runs extends Migration {
  override name = 'Migration20261209100000_backup_runs';

  override up(): void | Promise<void> {
    // Each `vpctl backup` that finished: the metrics' age of the last complete one (alert: older than a day).
    this.addSql(`create table "backup_runs" (
      "id" bigserial primary key,
      "finished_at" timestamptz not null default now(),
      "complete" boolean not null,
      "dir" text not null);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "backup_runs";`);
  }
}
