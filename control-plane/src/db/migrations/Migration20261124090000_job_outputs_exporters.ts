import { Migration } from '@mikro-orm/migrations';

export class Migration20261124090000_job_outputs_exporters extends Migration {
  override name = 'Migration20261124090000_job_outputs_exporters';

  override up(): void | Promise<void> {
    // What a host job needs of its host besides GPUs (an export format's toolchain), and what each host offers.
    this.addSql(`alter table "jobs" add "toolchain" varchar(32) null;`);
    this.addSql(
      `alter table "hosts" add "exporters" text[] not null default '{}', add "missing_exporters" jsonb not null default '{}';`,
    );
    // Files a host job left behind (an exported model), uploaded by its agent before it reported the job completed.
    this.addSql(`create table "job_outputs" (
      "job_id" varchar(24) not null references "jobs" ("id") on delete cascade,
      "name" varchar(128) not null,
      "attempt" int not null,
      "storage_key" varchar(1024) not null,
      "size" bigint not null,
      "sha256" char(64) not null,
      "created_at" timestamptz not null default now(),
      primary key ("job_id", "name"));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "job_outputs";`);
    this.addSql(`alter table "hosts" drop column "exporters", drop column "missing_exporters";`);
    this.addSql(`alter table "jobs" drop column "toolchain";`);
  }
}
