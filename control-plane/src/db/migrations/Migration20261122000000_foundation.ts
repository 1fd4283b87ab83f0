import { Migration } from '@mikro-orm/migrations';

export class Migration20261122000000_foundation extends Migration {
  override name = 'Migration20261122000000_foundation';

  override up(): void {
    this.addSql(
      `create table "users" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "username" varchar(32) not null, "name" varchar(100) not null, primary key ("id"));`,
    );
    this.addSql(`alter table "users" add constraint "users_username_unique" unique ("username");`);

    this.addSql(
      `create table "workspaces" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "handle" varchar(32) not null, "name" varchar(100) not null, "kind" text not null, "region" text not null, "owner_id" varchar(24) not null, primary key ("id"));`,
    );
    this.addSql(`alter table "workspaces" add constraint "workspaces_handle_unique" unique ("handle");`);
    this.addSql(
      `alter table "workspaces" add constraint "workspaces_kind_check" check ("kind" in ('personal', 'team'));`,
    );
    this.addSql(
      `alter table "workspaces" add constraint "workspaces_region_check" check ("region" in ('us', 'eu', 'ap'));`,
    );

    this.addSql(
      `create table "stored_objects" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "kind" text not null, "key" varchar(1024) not null, "bytes" bigint not null, primary key ("id"));`,
    );
    this.addSql(`alter table "stored_objects" add constraint "stored_objects_key_unique" unique ("key");`);
    this.addSql(`create index "stored_objects_workspace_id_kind_index" on "stored_objects" ("workspace_id", "kind");`);
    this.addSql(
      `alter table "stored_objects" add constraint "stored_objects_kind_check" check ("kind" in ('datasetImages', 'datasetArchives', 'modelFiles', 'exports'));`,
    );

    this.addSql(
      `create table "memberships" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "user_id" varchar(24) not null, "role" text not null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "memberships" add constraint "memberships_workspace_id_user_id_unique" unique ("workspace_id", "user_id");`,
    );
    this.addSql(
      `alter table "memberships" add constraint "memberships_role_check" check ("role" in ('viewer', 'editor', 'admin', 'owner'));`,
    );

    this.addSql(
      `create table "api_keys" ("id" varchar(24) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "workspace_id" varchar(24) not null, "user_id" varchar(24) not null, "name" varchar(100) not null, "key_hash" varchar(64) not null, "prefix" varchar(11) not null, "last_used_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "api_keys" add constraint "api_keys_key_hash_unique" unique ("key_hash");`);
    this.addSql(`create index "api_keys_prefix_index" on "api_keys" ("prefix");`);

    this.addSql(
      `alter table "workspaces" add constraint "workspaces_owner_id_foreign" foreign key ("owner_id") references "users" ("id");`,
    );
    this.addSql(
      `alter table "stored_objects" add constraint "stored_objects_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "memberships" add constraint "memberships_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "memberships" add constraint "memberships_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "api_keys" add constraint "api_keys_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );

    // Rate-limit counters: unlogged (losing them in a crash only forgives recent requests).
    this.addSql(
      `create unlogged table "rate_limit_windows" ("bucket" text not null, "window_start_ms" bigint not null, "hits" integer not null, primary key ("bucket", "window_start_ms"));`,
    );
    this.addSql(`
      create function rate_limit_take(p_bucket text, p_limit integer, p_window_ms bigint)
      returns table (allowed boolean, current_hits integer, previous_hits integer, window_start_ms bigint, now_ms bigint)
      language plpgsql as $$
      #variable_conflict use_column
      declare
        v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000);
        v_start bigint := v_now - v_now % p_window_ms;
        v_weight double precision := 1 - (v_now - v_start)::double precision / p_window_ms;
        v_previous integer;
        v_current integer;
      begin
        select w.hits into v_previous from rate_limit_windows w
          where w.bucket = p_bucket and w.window_start_ms = v_start - p_window_ms;
        v_previous := coalesce(v_previous, 0);
        insert into rate_limit_windows as w (bucket, window_start_ms, hits)
          select p_bucket, v_start, 1 where v_previous * v_weight + 1 <= p_limit
          on conflict (bucket, window_start_ms) do update set hits = w.hits + 1
            where v_previous * v_weight + w.hits + 1 <= p_limit
          returning w.hits into v_current;
        if v_current is not null then
          return query select true, v_current, v_previous, v_start, v_now;
        else
          select coalesce((select w.hits from rate_limit_windows w where w.bucket = p_bucket and w.window_start_ms = v_start), 0)
            into v_current;
          return query select false, v_current, v_previous, v_start, v_now;
        end if;
      end $$;`);
  }
}
