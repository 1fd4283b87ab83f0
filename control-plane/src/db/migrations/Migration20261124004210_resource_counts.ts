import { Migration } from '@mikro-orm/migrations';

export class Migration20261124004210_resource_counts extends Migration {
  override name = 'Migration20261124004210_resource_counts';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "workspace_resource_counts" ("workspace_id" varchar(24) not null, "kind" text not null, "total" int not null default 0, primary key ("workspace_id", "kind"));`,
    );

    this.addSql(
      `alter table "workspace_resource_counts" add constraint "workspace_resource_counts_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "workspace_resource_counts" add constraint "workspace_resource_counts_kind_check" check ("kind" in ('projects', 'datasets', 'models'));`,
    );

    // A row counts while it exists outside the trash; its table's name is its kind. The triggers are deferred to
    // commit, so a long transaction that creates a resource (a dataset clone copying images) locks its workspace's
    // counter only while committing, and they fire whatever wrote the row (the ORM, hand-written SQL, a cascade).
    this.addSql(`
      create function count_workspace_resource() returns trigger language plpgsql as $$
      begin
        if TG_OP <> 'INSERT' and OLD.deleted_at is null then
          update workspace_resource_counts set total = total - 1 where workspace_id = OLD.workspace_id and kind = TG_TABLE_NAME;
        end if;
        if TG_OP <> 'DELETE' and NEW.deleted_at is null then
          -- Not for a workspace deleted later in the same transaction (its rows are gone with it).
          insert into workspace_resource_counts as c (workspace_id, kind, total)
            select NEW.workspace_id, TG_TABLE_NAME, 1 where exists (select 1 from workspaces w where w.id = NEW.workspace_id)
            on conflict (workspace_id, kind) do update set total = c.total + 1;
        end if;
        return null;
      end $$;`);
    // Triggers first: creating one locks its table against writes until this migration commits, so the counts
    // below miss nothing a replica on the old code writes meanwhile.
    for (const table of ['projects', 'datasets', 'models']) {
      this
        .addSql(`create constraint trigger "${table}_workspace_count" after insert or delete or update of "deleted_at", "workspace_id" on "${table}"
        deferrable initially deferred for each row execute function count_workspace_resource();`);
      this.addSql(`insert into "workspace_resource_counts" ("workspace_id", "kind", "total")
        select "workspace_id", '${table}', count(*) from "${table}" where "deleted_at" is null group by "workspace_id";`);
    }
    // Every replica caches the summary's figures (counts and credit balance) and drops a workspace's on this
    // channel (SUMMARY_FIGURES_CHANNEL), which PostgreSQL delivers when the change commits.
    this.addSql(`
      create function notify_summary_figures() returns trigger language plpgsql as $$
      begin
        perform pg_notify('vp_summary_figures', coalesce(NEW.workspace_id, OLD.workspace_id));
        return null;
      end $$;`);
    for (const table of ['workspace_resource_counts', 'credit_balances']) {
      this.addSql(
        `create trigger "${table}_notify" after insert or update or delete on "${table}" for each row execute function notify_summary_figures();`,
      );
    }
  }

  override down(): void | Promise<void> {
    for (const table of ['workspace_resource_counts', 'credit_balances'])
      this.addSql(`drop trigger if exists "${table}_notify" on "${table}";`);
    this.addSql(`drop function if exists notify_summary_figures();`);
    for (const table of ['projects', 'datasets', 'models'])
      this.addSql(`drop trigger if exists "${table}_workspace_count" on "${table}";`);
    this.addSql(`drop function if exists count_workspace_resource();`);
    this.addSql(`drop table if exists "workspace_resource_counts" cascade;`);
  }
}
