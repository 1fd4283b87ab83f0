import { Migration } from '@mikro-orm/migrations';

export class Migration20261122204806_uploads extends Migration {
  override name = 'Migration20261122204806_uploads';

  override up(): void {
    this.addSql(
      `create table "upload_sessions" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "asset_type" text not null, "asset_id" varchar(24) not null, "filename" varchar(256) not null, "content_type" varchar(255) not null, "total_bytes" bigint not null, "object_key" varchar(1024) not null, "create_only" boolean not null, "status" text not null default 'pending', "expires_at" timestamptz not null, "stored_md5" varchar(32) null, "completed_md5" varchar(32) null, "completed_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `create index "upload_sessions_workspace_id_status_index" on "upload_sessions" ("workspace_id", "status");`,
    );
    this.addSql(`create index "upload_sessions_expires_at_index" on "upload_sessions" ("expires_at");`);

    this.addSql(
      `create table "projects" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "slug" varchar(128) not null, "name" varchar(128) not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "projects" add constraint "projects_workspace_id_slug_unique" unique ("workspace_id", "slug");`,
    );

    this.addSql(
      `create table "models" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "project_id" varchar(24) not null, "slug" varchar(128) not null, "name" varchar(128) not null, "file_key" varchar(1024) null, "file_bytes" bigint null, "file_content_type" varchar(255) null, "file_md5" varchar(32) null, "file_checksum" varchar(128) null, primary key ("id"));`,
    );
    this.addSql(`alter table "models" add constraint "models_project_id_slug_unique" unique ("project_id", "slug");`);

    this.addSql(
      `create table "datasets" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "slug" varchar(128) not null, "name" varchar(128) not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "datasets" add constraint "datasets_workspace_id_slug_unique" unique ("workspace_id", "slug");`,
    );

    this.addSql(
      `alter table "upload_sessions" add constraint "upload_sessions_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "upload_sessions" add constraint "upload_sessions_asset_type_check" check ("asset_type" in ('datasets', 'models'));`,
    );
    this.addSql(
      `alter table "upload_sessions" add constraint "upload_sessions_status_check" check ("status" in ('pending', 'uploaded', 'completed'));`,
    );

    this.addSql(
      `alter table "projects" add constraint "projects_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "models" add constraint "models_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "models" add constraint "models_project_id_foreign" foreign key ("project_id") references "projects" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "datasets" add constraint "datasets_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
  }

  override down(): void {
    this.addSql(`drop table if exists "upload_sessions", "models", "projects", "datasets" cascade;`);
  }
}
