import { Migration } from '@mikro-orm/migrations';

export class Migration20261124050000_training_run_last_report extends Migration {
  override name = 'Migration20261124050000_training_run_last_report';

  override up(): void | Promise<void> {
    // Runs already there count as last heard of at their last change: an old dead run expires in time too.
    this.addSql(`alter table "training_runs" add "last_report_at" timestamptz null;`);
    this.addSql(`update "training_runs" set "last_report_at" = "updated_at";`);
    this.addSql(`alter table "training_runs" alter column "last_report_at" set not null;`);
    this.addSql(
      `create index "training_runs_own_compute_last_report_at_index" on "training_runs" ("last_report_at") where "status" = 'running' and "job_id" is null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "training_runs_own_compute_last_report_at_index";`);
    this.addSql(`alter table "training_runs" drop column "last_report_at";`);
  }
}
