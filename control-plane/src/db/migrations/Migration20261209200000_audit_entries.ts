import { Migration } from '@mikro-orm/migrations';

/**
 * The audit log (audit/): one row per change made through the API, the console's sessions or vpctl, and per sign-in.
 * No foreign keys: an entry outlives the user, key, workspace or host it names, and a batch of entries never fails
 * on one whose workspace was deleted meanwhile. Never a secret or a body (see audit/audit-actions.ts).
 */
export class Migration20261209200000_audit_entries extends Migration {
  override name = 'Migration20261209200000_audit_entries';

  override up(): void | Promise<void> {
    this.addSql(`create table "audit_entries" (
      "id" bigserial primary key,
      "at" timestamptz not null,
      "workspace_id" varchar(24) null,
      "actor_id" varchar(24) null,
      "actor_name" varchar(64) null,
      "via" varchar(16) null,
      "client_address" varchar(64) null,
      "action" varchar(128) not null,
      "resource" varchar(512) not null,
      "outcome" smallint not null,
      "request_id" varchar(64) null);`);
    // GET /api/audit's keyset pages: one workspace's entries, newest first.
    this.addSql(
      `create index "audit_entries_workspace_id_at_id_index" on "audit_entries" ("workspace_id", "at" desc, "id" desc);`,
    );
    // vpctl audit export (every workspace, oldest first) and the retention purge (the oldest first).
    this.addSql(`create index "audit_entries_at_id_index" on "audit_entries" ("at", "id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "audit_entries";`);
  }
}
