import { Migration } from '@mikro-orm/migrations';

export class Migration20261123010011_training_runs_job_keys extends Migration {
  override name = 'Migration20261123010011_training_runs_job_keys';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "training_runs" ("id" bigserial primary key, "workspace_id" varchar(24) not null, "model_id" varchar(24) not null, "job_id" varchar(24) null, "status" text not null default 'running', "epochs" int null, "epochs_done" int not null default 0, "device" varchar(128) null, "train_args" jsonb null, "environment" jsonb null, "model_info" jsonb null, "error" text null, "cancel_requested" boolean not null default false, "checkpoint_key" varchar(1024) null, "checkpoint_at" timestamptz null, "resume_key" varchar(1024) null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "completed_at" timestamptz null);`,
    );
    this.addSql(
      `create index "training_runs_model_id_created_at_index" on "training_runs" ("model_id", "created_at");`,
    );
    this.addSql(`create index "training_runs_job_id_index" on "training_runs" ("job_id");`);

    this.addSql(
      `create table "training_epochs" ("id" bigserial primary key, "run_id" bigint not null, "epoch" int not null, "metrics" jsonb not null, "system" jsonb null, "fitness" double precision null, "best_fitness" double precision null, "at" timestamptz not null);`,
    );
    this.addSql(
      `alter table "training_epochs" add constraint "training_epochs_run_id_epoch_unique" unique ("run_id", "epoch");`,
    );

    this.addSql(
      `create table "training_console" ("id" bigserial primary key, "run_id" bigint not null, "chunk_id" bigint not null, "content" text not null, "line_count" int not null, "at" timestamptz not null);`,
    );
    this.addSql(
      `alter table "training_console" add constraint "training_console_run_id_chunk_id_unique" unique ("run_id", "chunk_id");`,
    );

    this.addSql(`alter table "upload_sessions" alter column "total_bytes" drop not null;`);

    this.addSql(`alter table "api_keys" add "job_scope" jsonb null, add "expires_at" timestamptz null;`);

    this.addSql(
      `alter table "training_runs" add constraint "training_runs_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "training_runs" add constraint "training_runs_model_id_foreign" foreign key ("model_id") references "models" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "training_runs" add constraint "training_runs_job_id_foreign" foreign key ("job_id") references "jobs" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "training_runs" add constraint "training_runs_status_check" check ("status" in ('running', 'completed', 'failed', 'cancelled'));`,
    );

    this.addSql(
      `alter table "training_epochs" add constraint "training_epochs_run_id_foreign" foreign key ("run_id") references "training_runs" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "training_console" add constraint "training_console_run_id_foreign" foreign key ("run_id") references "training_runs" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "training_epochs" drop constraint "training_epochs_run_id_foreign";`);
    this.addSql(`alter table "training_console" drop constraint "training_console_run_id_foreign";`);

    this.addSql(`drop table if exists "training_runs" cascade;`);
    this.addSql(`drop table if exists "training_epochs" cascade;`);
    this.addSql(`drop table if exists "training_console" cascade;`);

    this.addSql(`alter table "api_keys" drop column "job_scope", drop column "expires_at";`);

    this.addSql(`alter table "upload_sessions" alter column "total_bytes" set not null;`);
  }
}
