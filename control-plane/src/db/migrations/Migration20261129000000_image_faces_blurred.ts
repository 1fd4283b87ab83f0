import { Migration } from '@mikro-orm/migrations';

export class Migration20261129000000_image_faces_blurred extends Migration {
  override name = 'Migration20261129000000_image_faces_blurred';

  override up(): void | Promise<void> {
    // Checked by the face detector and blurred where it found faces (datasets with blurFaces); the face blur job takes the rest.
    this.addSql(`alter table "images" add "faces_blurred" boolean not null default false;`);
    this.addSql(`alter table "ingest_staged_images" add "faces_blurred" boolean not null default false;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "ingest_staged_images" drop column "faces_blurred";`);
    this.addSql(`alter table "images" drop column "faces_blurred";`);
  }
}
