import { Migration } from '@mikro-orm/migrations';

export class Migration20261204000000_local_integrations extends Migration {

  override name = 'Migration20261204000000_local_integrations';

  override up(): void | Promise<void> {
    // local: folders shared by a worker host's agent, read over its worker socket.
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(`alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3', 'gcs', 'azure', 'local'));`);
  }

  override down(): void | Promise<void> {
    this.addSql(`delete from "storage_integrations" where "provider" = 'local';`);
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(`alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3', 'gcs', 'azure'));`);
  }

}
