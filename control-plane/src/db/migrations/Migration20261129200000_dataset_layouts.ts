import { Migration } from '@mikro-orm/migrations';

export class Migration20261129200000_dataset_layouts extends Migration {
  override name = 'Migration20261129200000_dataset_layouts';

  override up(): void | Promise<void> {
    // A dataset's 2-D layout from its last analysis: one header (the digest says which vectors it was made from, so an
    // analysis that changed nothing keeps it) and one point per image laid out. Points name images without a foreign
    // key: an image deleted since keeps its point, answered as missing.
    this.addSql(
      `create table "dataset_layouts" ("dataset_id" varchar(24) not null, "workspace_id" varchar(24) not null, "model_id" varchar(64) not null, "digest" varchar(64) not null, "points" int not null, "created_at" timestamptz not null default now(), primary key ("dataset_id"));`,
    );
    this.addSql(
      `alter table "dataset_layouts" add constraint "dataset_layouts_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "dataset_layouts" add constraint "dataset_layouts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "dataset_layout_points" ("dataset_id" varchar(24) not null, "image_id" varchar(24) not null, "x" real not null, "y" real not null, "cluster" int null, primary key ("dataset_id", "image_id"));`,
    );
    this.addSql(
      `alter table "dataset_layout_points" add constraint "dataset_layout_points_dataset_id_foreign" foreign key ("dataset_id") references "dataset_layouts" ("dataset_id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "dataset_layout_points" cascade;`);
    this.addSql(`drop table if exists "dataset_layouts" cascade;`);
  }
}
