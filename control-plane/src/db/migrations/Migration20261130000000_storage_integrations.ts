import { Migration } from '@mikro-orm/migrations';

export class Migration20261130000000_storage_integrations extends Migration {
  override name = 'Migration20261130000000_storage_integrations';

  override up(): void | Promise<void> {
    // Credentials are an AES-256-GCM ciphertext (bytea) with the id of the key that sealed them; never plain text.
    this.addSql(
      `create table "storage_integrations" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "provider" text not null, "credential_identity" varchar(300) not null, "targets" jsonb not null, "processing" boolean not null default true, "credentials_key_id" varchar(16) not null, "credentials" bytea not null, primary key ("id"));`,
    );
    this.addSql(`create index "storage_integrations_workspace_id_index" on "storage_integrations" ("workspace_id");`);
    this.addSql(
      `create index "storage_integrations_credentials_key_id_index" on "storage_integrations" ("credentials_key_id");`,
    );
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "storage_integrations" add constraint "storage_integrations_provider_check" check ("provider" in ('s3'));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "storage_integrations" cascade;`);
  }
}
