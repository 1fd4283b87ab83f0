import { Migration } from '@mikro-orm/migrations';

export class Migration20261123020958_job_run_seconds extends Migration {

  override name = 'Migration20261123020958_job_run_seconds';

  override up(): void | Promise<void> {
    this.addSql(`alter table "jobs" add "run_seconds" double precision not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "jobs" drop column "run_seconds";`);
  }

}
