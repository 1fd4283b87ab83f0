import { Migration } from '@mikro-orm/migrations';

export class Migration20261122221348_datasets_images extends Migration {
  override name = 'Migration20261122221348_datasets_images';

  override up(): void | Promise<void> {
    // Trigram indexes make the images search filter (a substring match) an index lookup.
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(
      `create table "images" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "dataset_id" varchar(24) not null, "hash" varchar(64) not null, "ext" varchar(16) not null, "name" varchar(256) not null, "width" int not null default 0, "height" int not null default 0, "channels" int not null default 3, "split" text not null default 'train', "label_count" int not null default 0, "class_ids" int[] not null default '{}', "bytes" bigint not null, "error" text null, "metadata" jsonb not null default '{}', "search_text" text not null default '', primary key ("id"));`,
    );
    this.addSql(`create index "images_dataset_id_created_at_id_index" on "images" ("dataset_id", "created_at", "id");`);
    this.addSql(`create index "images_dataset_id_name_id_index" on "images" ("dataset_id", "name", "id");`);
    this.addSql(`create index "images_dataset_id_width_id_index" on "images" ("dataset_id", "width", "id");`);
    this.addSql(`create index "images_dataset_id_height_id_index" on "images" ("dataset_id", "height", "id");`);
    this.addSql(`create index "images_dataset_id_bytes_id_index" on "images" ("dataset_id", "bytes", "id");`);
    this.addSql(
      `create index "images_dataset_id_label_count_id_index" on "images" ("dataset_id", "label_count", "id");`,
    );
    this.addSql(
      `create index "images_dataset_id_split_created_at_id_index" on "images" ("dataset_id", "split", "created_at", "id");`,
    );
    this.addSql(`create index "images_dataset_id_hash_index" on "images" ("dataset_id", "hash");`);
    this.addSql(`create index "images_workspace_id_hash_index" on "images" ("workspace_id", "hash");`);
    this.addSql(
      `create index "images_counting" on "images" ("dataset_id", "split", "label_count") include ("class_ids");`,
    );
    this.addSql(`create index "images_class_ids_gin" on "images" using gin ("class_ids");`);
    this.addSql(`create index "images_search_trgm" on "images" using gin ("search_text" gin_trgm_ops);`);

    this.addSql(
      `create table "dataset_stars" ("dataset_id" varchar(24) not null, "user_id" varchar(24) not null, "created_at" timestamptz not null, primary key ("dataset_id", "user_id"));`,
    );

    this.addSql(
      `create table "annotations" ("image_id" varchar(24) not null, "position" int not null, "dataset_id" varchar(24) not null, "class_id" int not null, "label" jsonb not null, "cx" real null, "cy" real null, "w" real null, "h" real null, "points" int not null default 0, primary key ("image_id", "position"));`,
    );
    this.addSql(`create index "annotations_dataset_id_class_id_index" on "annotations" ("dataset_id", "class_id");`);

    this.addSql(
      `alter table "datasets" add "description" text not null default '', add "task" text not null default 'detect', add "format" text not null default 'yolo', add "visibility" text not null default 'private', add "blur_faces" boolean not null default false, add "tags" jsonb not null default '[]', add "license" varchar(64) null, add "metadata" jsonb not null default '{}', add "class_names" jsonb not null default '[]', add "class_colors" jsonb not null default '[]', add "icon_color" varchar(32) null, add "icon_letter" varchar(2) null, add "kpt_skeleton_id" varchar(64) null, add "kpt_shape" jsonb null, add "status" varchar(32) not null default 'ready', add "source" jsonb null, add "image_count" int not null default 0, add "annotation_count" int not null default 0, add "train_count" int not null default 0, add "val_count" int not null default 0, add "test_count" int not null default 0, add "labeled_count" int not null default 0, add "error_count" int not null default 0, add "star_count" int not null default 0, add "revision" int not null default 0, add "stats_cache" jsonb null, add "stats_revision" int null, add "deleted_at" timestamptz null;`,
    );
    this.addSql(`create index "datasets_visibility_index" on "datasets" ("visibility");`);
    this.addSql(
      `alter table "datasets" add constraint "datasets_task_check" check ("task" in ('detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb'));`,
    );
    this.addSql(
      `alter table "datasets" add constraint "datasets_format_check" check ("format" in ('yolo', 'coco', 'raw', 'ndjson'));`,
    );
    this.addSql(
      `alter table "datasets" add constraint "datasets_visibility_check" check ("visibility" in ('public', 'private'));`,
    );

    this.addSql(
      `alter table "models" add "dataset_id" varchar(24) null, add "task" text not null default 'detect', add "status" varchar(32) not null default 'pending', add "epochs" int null, add "best_epoch" int null, add "metrics" jsonb null, add "started_at" timestamptz null, add "completed_at" timestamptz null;`,
    );
    this.addSql(
      `alter table "models" add constraint "models_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete set null;`,
    );
    this.addSql(
      `alter table "models" add constraint "models_task_check" check ("task" in ('detect', 'segment', 'semantic', 'depth', 'classify', 'pose', 'obb'));`,
    );

    this.addSql(
      `alter table "images" add constraint "images_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "images" add constraint "images_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "images" add constraint "images_split_check" check ("split" in ('train', 'val', 'test'));`,
    );

    this.addSql(
      `alter table "dataset_stars" add constraint "dataset_stars_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on update cascade on delete cascade;`,
    );
    this.addSql(
      `alter table "dataset_stars" add constraint "dataset_stars_user_id_foreign" foreign key ("user_id") references "users" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "annotations" add constraint "annotations_image_id_foreign" foreign key ("image_id") references "images" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "annotations" add constraint "annotations_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "annotations", "dataset_stars", "images" cascade;`);
    this.addSql(
      `alter table "models" drop constraint "models_dataset_id_foreign", drop constraint "models_task_check";`,
    );
    this.addSql(
      `alter table "models" drop column "dataset_id", drop column "task", drop column "status", drop column "epochs", drop column "best_epoch", drop column "metrics", drop column "started_at", drop column "completed_at";`,
    );
    this.addSql(`drop index "datasets_visibility_index";`);
    this.addSql(
      `alter table "datasets" drop constraint "datasets_task_check", drop constraint "datasets_format_check", drop constraint "datasets_visibility_check";`,
    );
    this.addSql(
      `alter table "datasets" drop column "description", drop column "task", drop column "format", drop column "visibility", drop column "blur_faces", drop column "tags", drop column "license", drop column "metadata", drop column "class_names", drop column "class_colors", drop column "icon_color", drop column "icon_letter", drop column "kpt_skeleton_id", drop column "kpt_shape", drop column "status", drop column "source", drop column "image_count", drop column "annotation_count", drop column "train_count", drop column "val_count", drop column "test_count", drop column "labeled_count", drop column "error_count", drop column "star_count", drop column "revision", drop column "stats_cache", drop column "stats_revision", drop column "deleted_at";`,
    );
  }
}
