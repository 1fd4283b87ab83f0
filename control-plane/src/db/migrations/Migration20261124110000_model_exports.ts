import { Migration } from '@mikro-orm/migrations';

export class Migration20261124110000_model_exports extends Migration {
  override name = 'Migration20261124110000_model_exports';

  override up(): void | Promise<void> {
    // A model's weights hashed once per file (exports are matched by it): valid while weights_sha256_key is its file_key.
    this.addSql(
      `alter table "models" add "weights_sha256" char(64) null, add "weights_sha256_key" varchar(1024) null;`,
    );
    // A model converted to another format by a host job; status is null while the job is active (read from the job) and
    // set when the job ends. fingerprint: what makes two exports equivalent (weights hash, format, normalized args, GPU type).
    this.addSql(`create table "model_exports" (
      "id" varchar(24) not null primary key,
      "workspace_id" varchar(24) not null references "workspaces" ("id") on delete cascade,
      "model_id" varchar(24) not null references "models" ("id") on delete cascade,
      "job_id" varchar(24) null references "jobs" ("id") on delete set null,
      "format" varchar(32) not null,
      "args" jsonb not null default '{}',
      "gpu_type" varchar(64) null,
      "weights_key" varchar(1024) not null,
      "weights_sha256" char(64) not null,
      "fingerprint" char(64) not null,
      "status" varchar(16) null check ("status" in ('completed', 'failed', 'cancelled')),
      "error" text null,
      "file_key" varchar(1024) null,
      "file_size" bigint null,
      "file_sha256" char(64) null,
      "file_name" varchar(160) null,
      "started_at" timestamptz null,
      "completed_at" timestamptz null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
    this.addSql(
      `create index "model_exports_model_id_created_at_index" on "model_exports" ("model_id", "created_at");`,
    );
    this.addSql(`create index "model_exports_file_key_index" on "model_exports" ("file_key");`);
    this.addSql(`create index "model_exports_job_id_index" on "model_exports" ("job_id");`);
    // One equivalent export in flight per workspace (409), found again by reuse once completed.
    this.addSql(
      `create unique index "model_exports_one_in_flight" on "model_exports" ("workspace_id", "fingerprint") where "status" is null;`,
    );
    this.addSql(
      `create index "model_exports_fingerprint_index" on "model_exports" ("workspace_id", "fingerprint", "status");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "model_exports";`);
    this.addSql(`alter table "models" drop column "weights_sha256", drop column "weights_sha256_key";`);
  }
}
