import { Migration } from '@mikro-orm/migrations';

export class Migration20261122223030_jobs_versions extends Migration {
  override name = 'Migration20261122223030_jobs_versions';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "jobs" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "kind" varchar(64) not null, "subject_id" varchar(24) null, "status" text not null default 'queued', "priority" int not null default 0, "payload" jsonb not null default '{}', "progress" jsonb null, "result" jsonb null, "error" text null, "attempts" int not null default 0, "max_attempts" int not null default 3, "lease_owner" varchar(64) null, "lease_expires_at" timestamptz null, "cancel_requested" boolean not null default false, "started_at" timestamptz null, "finished_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`create index "jobs_status_priority_created_at_index" on "jobs" ("status", "priority", "created_at");`);
    this.addSql(`create index "jobs_subject_id_status_index" on "jobs" ("subject_id", "status");`);
    this.addSql(`create index "jobs_workspace_id_created_at_index" on "jobs" ("workspace_id", "created_at");`);

    this.addSql(
      `create table "ingest_staged_images" ("job_id" varchar(24) not null, "entry_path" varchar(1024) not null, "position" int not null, "hash" varchar(64) not null, "ext" varchar(16) not null, "name" varchar(256) not null, "width" int not null, "height" int not null, "channels" int not null, "bytes" bigint not null, "error" text null, "split" varchar(8) not null, "labels" jsonb not null, "metadata" jsonb not null, primary key ("job_id", "entry_path"));`,
    );

    this.addSql(
      `create table "dataset_versions" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "dataset_id" varchar(24) not null, "version" int not null, "description" text null, "fingerprint" varchar(64) not null, "task" varchar(16) not null, "class_names" jsonb not null, "fields" jsonb not null default '{}', "image_count" int not null, "annotation_count" int not null, "ndjson_key" varchar(1024) null, "ndjson_bytes" bigint null, primary key ("id"));`,
    );
    this.addSql(
      `create index "dataset_versions_dataset_id_fingerprint_index" on "dataset_versions" ("dataset_id", "fingerprint");`,
    );
    this.addSql(
      `alter table "dataset_versions" add constraint "dataset_versions_dataset_id_version_unique" unique ("dataset_id", "version");`,
    );

    this.addSql(
      `create table "dataset_version_images" ("version_id" varchar(24) not null, "position" int not null, "hash" varchar(64) not null, "ext" varchar(16) not null, "name" varchar(256) not null, "width" int not null, "height" int not null, "channels" int not null, "bytes" bigint not null, "split" varchar(8) not null, "error" text null, "label_count" int not null, "labels" jsonb not null, "metadata" jsonb not null, primary key ("version_id", "position"));`,
    );
    this.addSql(
      `create index "dataset_version_images_version_id_hash_index" on "dataset_version_images" ("version_id", "hash");`,
    );

    this.addSql(`alter table "datasets" add "export_key" varchar(1024) null, add "export_revision" int null;`);

    this.addSql(
      `alter table "jobs" add constraint "jobs_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "jobs" add constraint "jobs_status_check" check ("status" in ('queued', 'running', 'completed', 'failed', 'cancelled'));`,
    );

    this.addSql(
      `alter table "ingest_staged_images" add constraint "ingest_staged_images_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "dataset_versions" add constraint "dataset_versions_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "dataset_version_images" add constraint "dataset_version_images_version_id_foreign" foreign key ("version_id") references "dataset_versions" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "ingest_staged_images" drop constraint "ingest_staged_images_job_id_foreign";`);
    this.addSql(`alter table "dataset_version_images" drop constraint "dataset_version_images_version_id_foreign";`);

    this.addSql(`drop table if exists "jobs" cascade;`);
    this.addSql(`drop table if exists "ingest_staged_images" cascade;`);
    this.addSql(`drop table if exists "dataset_versions" cascade;`);
    this.addSql(`drop table if exists "dataset_version_images" cascade;`);

    this.addSql(`alter table "datasets" drop column "export_key", drop column "export_revision";`);
  }
}
