import { Migration } from '@mikro-orm/migrations';

export class Migration20261124030000_job_lifecycle extends Migration {
  override name = 'Migration20261124030000_job_lifecycle';

  override up(): void | Promise<void> {
    // One active job per subject for exclusive kinds: two concurrent starts of a model's training cannot both insert.
    // Jobs queued before this release are not exclusive; the services' own check still sees them.
    this.addSql(`alter table "jobs" add "exclusive" boolean not null default false;`);
    this.addSql(
      `create unique index "jobs_one_active_per_subject" on "jobs" ("kind", "subject_id") where "exclusive" and "status" in ('queued', 'running');`,
    );
    // The moves of JOB_TRANSITIONS (jobs/job-transitions.ts), enforced whatever statement tries another: an ended job
    // is never run again.
    this.addSql(`
      create function jobs_check_transition() returns trigger language plpgsql as $$
      begin
        if not ((old.status = 'queued' and new.status in ('running', 'cancelled', 'failed'))
             or (old.status = 'running' and new.status in ('queued', 'completed', 'failed', 'cancelled'))) then
          raise exception 'job % cannot go from % to %', old.id, old.status, new.status using errcode = 'check_violation';
        end if;
        return new;
      end $$;`);
    this.addSql(`create trigger "jobs_status_transition" before update of "status" on "jobs" for each row
      when (old.status is distinct from new.status) execute function jobs_check_transition();`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop trigger "jobs_status_transition" on "jobs";`);
    this.addSql(`drop function jobs_check_transition();`);
    this.addSql(`drop index "jobs_one_active_per_subject";`);
    this.addSql(`alter table "jobs" drop column "exclusive";`);
  }
}
