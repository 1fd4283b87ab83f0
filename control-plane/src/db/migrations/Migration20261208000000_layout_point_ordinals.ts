import { Migration } from '@mikro-orm/migrations';

export class Migration20261208000000_layout_point_ordinals extends Migration {
  override name = 'Migration20261208000000_layout_point_ordinals';

  override up(): void | Promise<void> {
    // Each point's place in its layout's image ID order: a page of the clustering at any offset is then a range of the
    // index (an offset skipping rows made the 20th page of a million points read 950,000 rows first).
    this.addSql(`alter table "dataset_layout_points" add "ordinal" int null;`);
    this.addSql(
      `update "dataset_layout_points" p set "ordinal" = o."ordinal" from (select "dataset_id", "image_id", (row_number() over (partition by "dataset_id" order by "image_id") - 1)::int as "ordinal" from "dataset_layout_points") o where o."dataset_id" = p."dataset_id" and o."image_id" = p."image_id";`,
    );
    this.addSql(`alter table "dataset_layout_points" alter column "ordinal" set not null;`);
    this.addSql(
      `create unique index "dataset_layout_points_ordinal_index" on "dataset_layout_points" ("dataset_id", "ordinal");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "dataset_layout_points_ordinal_index";`);
    this.addSql(`alter table "dataset_layout_points" drop column "ordinal";`);
  }
}
