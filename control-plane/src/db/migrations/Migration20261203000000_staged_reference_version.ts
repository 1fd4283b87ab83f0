import { Migration } from '@mikro-orm/migrations';

export class Migration20261203000000_staged_reference_version extends Migration {
  override name = 'Migration20261203000000_staged_reference_version';

  override up(): void | Promise<void> {
    // An ingest by reference stages each image with the version of the object it read, written to the image at commit.
    this.addSql(`alter table "ingest_staged_images" add column "reference_version" varchar(300) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "ingest_staged_images" drop column "reference_version";`);
  }
}
