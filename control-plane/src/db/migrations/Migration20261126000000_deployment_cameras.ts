import { Migration } from '@mikro-orm/migrations';

export class Migration20261126000000_deployment_cameras extends Migration {
  override name = 'Migration20261126000000_deployment_cameras';

  override up(): void | Promise<void> {
    // The camera's frame rate, kept with its URL so that every new revision's server is given both.
    this.addSql(`alter table "deployments" add "camera_fps" real not null default 1;`);
    // The camera a revision's server was told to read (null: none): a live one differing from its deployment's is told again.
    this.addSql(`alter table "deployment_revisions" add "camera_url" text null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "deployment_revisions" drop column "camera_url";`);
    this.addSql(`alter table "deployments" drop column "camera_fps";`);
  }
}
