import { Migration } from '@mikro-orm/migrations';

export class Migration20261206000000_job_lost_attempt_seconds extends Migration {
  override name = 'Migration20261206000000_job_lost_attempt_seconds';

  override up(): void | Promise<void> {
    // The part of run_seconds a lost attempt was counted for (until its host was last heard) while it waits in the
    // queue: when its host comes back with it and reports what it really ran, that replaces the part.
    this.addSql(`alter table "jobs" add "lost_attempt_seconds" double precision not null default 0;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "jobs" drop column "lost_attempt_seconds";`);
  }
}
