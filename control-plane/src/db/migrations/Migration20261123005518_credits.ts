import { Migration } from '@mikro-orm/migrations';

export class Migration20261123005518_credits extends Migration {
  override name = 'Migration20261123005518_credits';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "credit_transactions" ("id" varchar(24) not null, "workspace_id" varchar(24) not null, "kind" text not null, "amount_cents" bigint not null, "description" varchar(500) not null, "job_id" varchar(24) null, "metadata" jsonb not null default '{}', "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create index "credit_transactions_workspace_id_created_at_index" on "credit_transactions" ("workspace_id", "created_at");`,
    );
    this.addSql(
      `create index "credit_transactions_charge_gpu_type_index" on "credit_transactions" (("metadata"->>'gpuType'), "created_at") where "kind" = 'charge';`,
    );
    this.addSql(
      `create unique index "credit_transactions_job_id_kind_unique" on "credit_transactions" ("job_id", "kind") where "job_id" is not null;`,
    );

    this.addSql(
      `create table "credit_balances" ("workspace_id" varchar(24) not null, "balance_cents" bigint not null default '0', "updated_at" timestamptz not null, primary key ("workspace_id"));`,
    );

    this.addSql(
      `alter table "credit_transactions" add constraint "credit_transactions_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "credit_transactions" add constraint "credit_transactions_kind_check" check ("kind" in ('grant', 'adjustment', 'charge', 'refund'));`,
    );

    this.addSql(
      `alter table "credit_balances" add constraint "credit_balances_workspace_id_foreign" foreign key ("workspace_id") references "workspaces" ("id") on update cascade on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "credit_transactions" cascade;`);
    this.addSql(`drop table if exists "credit_balances" cascade;`);
  }
}
