import { Migration } from '@mikro-orm/migrations';

export class Migration20261122235521_hosts_worker_keys extends Migration {
  override name = 'Migration20261122235521_hosts_worker_keys';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "hosts" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) null, "name" varchar(63) not null, "state" text not null default 'enrolling', "hostname" varchar(255) null, "last_heartbeat_at" timestamptz null, "hardware" jsonb null, primary key ("id"));`,
    );
    this.addSql(
      `create unique index "hosts_workspace_id_name_unique" on "hosts" ("workspace_id", "name") nulls not distinct;`,
    );

    this.addSql(
      `create table "worker_keys" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "host_id" varchar(24) not null, "key_hash" varchar(64) not null, "prefix" varchar(12) not null, primary key ("id"));`,
    );
    this.addSql(`alter table "worker_keys" add constraint "worker_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create index "worker_keys_prefix_index" on "worker_keys" ("prefix");`);

    this.addSql(
      `create table "enrollment_tokens" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "host_id" varchar(24) not null, "token_hash" varchar(64) not null, "expires_at" timestamptz not null, "used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "enrollment_tokens" add constraint "enrollment_tokens_token_hash_unique" unique ("token_hash");`,
    );

    this.addSql(
      `alter table "hosts" add constraint "hosts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "hosts" add constraint "hosts_state_check" check ("state" in ('enrolling', 'disconnected', 'connected'));`,
    );

    this.addSql(
      `alter table "worker_keys" add constraint "worker_keys_host_id_foreign" foreign key ("host_id") references "hosts" ("id") on delete cascade;`,
    );

    this.addSql(
      `alter table "enrollment_tokens" add constraint "enrollment_tokens_host_id_foreign" foreign key ("host_id") references "hosts" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "worker_keys" drop constraint "worker_keys_host_id_foreign";`);
    this.addSql(`alter table "enrollment_tokens" drop constraint "enrollment_tokens_host_id_foreign";`);

    this.addSql(`drop table if exists "hosts" cascade;`);
    this.addSql(`drop table if exists "worker_keys" cascade;`);
    this.addSql(`drop table if exists "enrollment_tokens" cascade;`);
  }
}
