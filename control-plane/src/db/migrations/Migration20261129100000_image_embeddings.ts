import { Migration } from '@mikro-orm/migrations';

export class Migration20261129100000_image_embeddings extends Migration {
  override name = 'Migration20261129100000_image_embeddings';

  override up(): void | Promise<void> {
    // One vector per image (float32, little-endian), with the content hash and the embedder it was made from: an analysis
    // embeds only the images whose row is missing or differs. Workspace and dataset ids scope every read.
    this.addSql(
      `create table "image_embeddings" ("image_id" varchar(24) not null, "workspace_id" varchar(24) not null, "dataset_id" varchar(24) not null, "image_hash" varchar(64) not null, "model_id" varchar(64) not null, "vector" bytea not null, "created_at" timestamptz not null default now(), primary key ("image_id"));`,
    );
    this.addSql(
      `create index "image_embeddings_dataset_id_model_id_index" on "image_embeddings" ("dataset_id", "model_id");`,
    );
    this.addSql(
      `alter table "image_embeddings" add constraint "image_embeddings_image_id_foreign" foreign key ("image_id") references "images" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "image_embeddings" add constraint "image_embeddings_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "image_embeddings" add constraint "image_embeddings_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "image_embeddings" cascade;`);
  }
}
