import { Migration } from '@mikro-orm/migrations';

export class Migration20261202000000_storage_providers extends Migration {
  override name = 'Migration20261202000000_storage_providers';

  override up(): void | Promise<void> {
    // GCS and Azure Blob join S3.
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3', 'gcs', 'azure'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3'));`,
    );
  }
}
