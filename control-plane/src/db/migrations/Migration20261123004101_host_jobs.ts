import { Migration } from '@mikro-orm/migrations';

export class Migration20261123004101_host_jobs extends Migration {
  override name = 'Migration20261123004101_host_jobs';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "job_logs" ("seq" bigserial primary key, "job_id" varchar(24) not null, "stream" text not null, "line" text not null, "at" timestamptz not null);`,
    );
    this.addSql(`create index "job_logs_job_id_seq_index" on "job_logs" ("job_id", "seq");`);

    this.addSql(
      `alter table "jobs" add "placement" text not null default 'control-plane', add "gpu_type" varchar(64) null, add "gpu_count" int not null default 0, add "restartable" boolean not null default false, add "host_id" varchar(24) null, add "gpu_indexes" jsonb null, add "accepted_at" timestamptz null, add "log_lines" int not null default 0;`,
    );
    this.addSql(
      `alter table "jobs" add constraint "jobs_host_id_foreign" foreign key ("host_id") references "hosts" ("id") on delete set null;`,
    );
    this.addSql(`create index "jobs_host_id_status_index" on "jobs" ("host_id", "status");`);
    this.addSql(
      `alter table "jobs" add constraint "jobs_placement_check" check ("placement" in ('control-plane', 'host'));`,
    );

    this.addSql(
      `alter table "job_logs" add constraint "job_logs_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "job_logs" add constraint "job_logs_stream_check" check ("stream" in ('stdout', 'stderr'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "job_logs" cascade;`);

    this.addSql(`alter table "jobs" drop constraint "jobs_host_id_foreign";`);

    this.addSql(`drop index "jobs_host_id_status_index";`);
    this.addSql(`alter table "jobs" drop constraint "jobs_placement_check";`);
    this.addSql(
      `alter table "jobs" drop column "placement", drop column "gpu_type", drop column "gpu_count", drop column "restartable", drop column "host_id", drop column "gpu_indexes", drop column "accepted_at", drop column "log_lines";`,
    );
  }
}
