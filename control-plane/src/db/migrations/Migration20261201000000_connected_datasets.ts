import { Migration } from '@mikro-orm/migrations';

export class Migration20261201000000_connected_datasets extends Migration {
  override name = 'Migration20261201000000_connected_datasets';

  override up(): void | Promise<void> {
    // A connected dataset is indexed in place: where its files live, and per image the object it was read from.
    this.addSql(`alter table "datasets" add column "reference" jsonb null;`);
    this.addSql(
      `alter table "images" add column "reference_key" varchar(1100) null, add column "reference_version" varchar(300) null;`,
    );
    this.addSql(
      `create index "images_dataset_id_reference_key_index" on "images" ("dataset_id", "reference_key") where "reference_key" is not null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "images_dataset_id_reference_key_index";`);
    this.addSql(`alter table "images" drop column "reference_key", drop column "reference_version";`);
    this.addSql(`alter table "datasets" drop column "reference";`);
  }
}
