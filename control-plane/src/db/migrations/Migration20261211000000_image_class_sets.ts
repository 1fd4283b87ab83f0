import { Migration } from '@mikro-orm/migrations';

export class Migration20261211000000_image_class_sets extends Migration {
  override name = 'Migration20261211000000_image_class_sets';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "image_class_sets" ("id" bigserial primary key, "dataset_id" varchar(24) not null, "split" text not null, "labeled" boolean not null, "class_ids" int[] not null, "images" int not null);`,
    );
    this.addSql(`create index "image_class_sets_dataset_id_index" on "image_class_sets" ("dataset_id");`);
    this.addSql(
      `alter table "image_class_sets" add constraint "image_class_sets_dataset_id_foreign" foreign key ("dataset_id") references "datasets" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "image_class_sets" add constraint "image_class_sets_split_check" check ("split" in ('train', 'val', 'test'));`,
    );

    // Each statement on images adds its changes as new rows, grouped (one per dataset, split, labeled and class set
    // that changed), whatever wrote them: the ORM, hand-written SQL, a cascade. Only inserts, so that writers of the
    // same dataset never wait for each other here; readers sum the rows, and compact them (image-class-set.store.ts).
    // A dataset deleted in the same transaction is skipped: its rows went with it.
    const add = (changes: string) => `
      insert into image_class_sets (dataset_id, split, labeled, class_ids, images)
        select dataset_id, split, label_count > 0, class_ids, sum(change)::int from (${changes}) c
        where exists (select 1 from datasets d where d.id = c.dataset_id)
        group by 1, 2, 3, 4 having sum(change) <> 0;`;
    const added = 'select dataset_id, split, label_count, class_ids, 1 as change from new_images';
    const removed = 'select dataset_id, split, label_count, class_ids, -1 as change from old_images';
    this.addSql(`
      create function count_image_class_sets() returns trigger language plpgsql as $$
      begin
        if TG_OP = 'INSERT' then ${add(added)}
        elsif TG_OP = 'DELETE' then ${add(removed)}
        else ${add(`${removed} union all ${added}`)}
        end if;
        return null;
      end $$;`);
    // Triggers first: creating one locks images against writes until this migration commits, so the counts below
    // miss nothing a replica on the old code writes meanwhile.
    this.addSql(
      `create trigger "images_class_sets_insert" after insert on "images" referencing new table as new_images for each statement execute function count_image_class_sets();`,
    );
    this.addSql(
      `create trigger "images_class_sets_update" after update on "images" referencing old table as old_images new table as new_images for each statement execute function count_image_class_sets();`,
    );
    this.addSql(
      `create trigger "images_class_sets_delete" after delete on "images" referencing old table as old_images for each statement execute function count_image_class_sets();`,
    );
    this.addSql(`insert into "image_class_sets" ("dataset_id", "split", "labeled", "class_ids", "images")
      select "dataset_id", "split", "label_count" > 0, "class_ids", count(*) from "images" group by 1, 2, 3, 4;`);
  }

  override down(): void | Promise<void> {
    for (const event of ['insert', 'update', 'delete'])
      this.addSql(`drop trigger if exists "images_class_sets_${event}" on "images";`);
    this.addSql(`drop function if exists count_image_class_sets();`);
    this.addSql(`drop table if exists "image_class_sets" cascade;`);
  }
}
