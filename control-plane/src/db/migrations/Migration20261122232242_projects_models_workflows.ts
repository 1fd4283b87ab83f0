import { Migration } from '@mikro-orm/migrations';

export class Migration20261122232242_projects_models_workflows extends Migration {
  override name = 'Migration20261122232242_projects_models_workflows';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "workflows" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "name" varchar(128) not null, "graph" jsonb not null, "version" int not null default 1, "created_by_id" varchar(24) null, primary key ("id"));`,
    );
    this.addSql(
      `create index "workflows_workspace_id_updated_at_index" on "workflows" ("workspace_id", "updated_at");`,
    );

    this.addSql(
      `create table "project_stars" ("project_id" varchar(24) not null, "user_id" varchar(24) not null, "created_at" timestamptz not null, primary key ("project_id", "user_id"));`,
    );

    this.addSql(
      `create table "model_stars" ("model_id" varchar(24) not null, "user_id" varchar(24) not null, "created_at" timestamptz not null, primary key ("model_id", "user_id"));`,
    );

    this.addSql(
      `alter table "projects" add "description" text not null default '', add "visibility" text not null default 'private', add "tags" jsonb not null default '[]', add "license" varchar(64) null, add "metadata" jsonb not null default '{}', add "archived" boolean not null default false, add "icon_color" varchar(32) null, add "icon_letter" varchar(2) null, add "view_preferences" jsonb not null default '{}', add "star_count" int not null default 0, add "deleted_at" timestamptz null;`,
    );
    this.addSql(`create index "projects_deleted_at_index" on "projects" ("deleted_at");`);
    this.addSql(
      `alter table "projects" add constraint "projects_visibility_check" check ("visibility" in ('public', 'private'));`,
    );

    this.addSql(
      `alter table "models" add "description" text not null default '', add "metadata" jsonb not null default '{}', add "train_args" jsonb null, add "train_results" jsonb null, add "class_names" jsonb null, add "compute_cost" jsonb null, add "best_fitness" double precision null, add "version" varchar(50) null, add "color" varchar(32) null, add "license" varchar(64) null, add "dataset_slug" varchar(128) null, add "training_error" text null, add "analysis" jsonb null, add "star_count" int not null default 0, add "deleted_at" timestamptz null, add "trashed_with_project" boolean not null default false;`,
    );
    this.addSql(`create index "models_deleted_at_index" on "models" ("deleted_at");`);
    this.addSql(`create index "models_file_key_index" on "models" ("file_key");`);

    this.addSql(
      `alter table "workflows" add constraint "workflows_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "workflows" add constraint "workflows_created_by_id_foreign" foreign key ("created_by_id") references "users" ("id") on delete set null;`,
    );

    this.addSql(
      `alter table "project_stars" add constraint "project_stars_project_id_foreign" foreign key ("project_id") references "projects" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "project_stars" add constraint "project_stars_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "model_stars" add constraint "model_stars_model_id_foreign" foreign key ("model_id") references "models" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "model_stars" add constraint "model_stars_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "workflows" cascade;`);
    this.addSql(`drop table if exists "project_stars" cascade;`);
    this.addSql(`drop table if exists "model_stars" cascade;`);

    this.addSql(`drop index "models_deleted_at_index";`);
    this.addSql(`drop index "models_file_key_index";`);
    this.addSql(
      `alter table "models" drop column "description", drop column "metadata", drop column "train_args", drop column "train_results", drop column "class_names", drop column "compute_cost", drop column "best_fitness", drop column "version", drop column "color", drop column "license", drop column "dataset_slug", drop column "training_error", drop column "analysis", drop column "star_count", drop column "deleted_at", drop column "trashed_with_project";`,
    );

    this.addSql(`drop index "projects_deleted_at_index";`);
    this.addSql(`alter table "projects" drop constraint "projects_visibility_check";`);
    this.addSql(
      `alter table "projects" drop column "description", drop column "visibility", drop column "tags", drop column "license", drop column "metadata", drop column "archived", drop column "icon_color", drop column "icon_letter", drop column "view_preferences", drop column "star_count", drop column "deleted_at";`,
    );
  }
}
