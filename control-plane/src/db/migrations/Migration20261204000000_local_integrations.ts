import { Migration } from '@mikro-orm/migrations';

export class Migration20261204000000_local_integrations extends Migration {
  override name = 'Migration20261204000000_local_integrations';

  override up(): void | Promise<void> {
    // local: folders shared by a worker host's agent, read over its worker socket.
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3', 'gcs', 'azure', 'local'));`,
    );
    // Folder messages passed between replicas (host-folder-relay.ts): read and deleted within moments, so unlogged.
    this.addSql(
      `create unlogged table "host_folder_relay" ("id" bigserial primary key, "replica" varchar(24) not null, "payload" text not null, "created_at" timestamptz not null default now());`,
    );
    this.addSql(`create index "host_folder_relay_replica_index" on "host_folder_relay" ("replica", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "host_folder_relay";`);
    this.addSql(`delete from "storage_integrations" where "provider" = 'local';`);
    this.addSql(`alter table "storage_integrations" drop constraint if exists "storage_integrations_provider_check";`);
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3', 'gcs', 'azure'));`,
    );
  }
}
