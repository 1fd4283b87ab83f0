import { Migration } from '@mikro-orm/migrations';

export class Migration20261124040000_host_sessions extends Migration {
  override name = 'Migration20261124040000_host_sessions';

  override up(): void | Promise<void> {
    // The host's current worker socket, whichever replica holds it: the newest hello wins, and a socket whose
    // session is no longer here changes nothing (see workers/host-sessions.ts).
    this.addSql(
      `alter table "hosts" add "session_id" varchar(24) null, add "session_replica" varchar(24) null, add "session_started_at" timestamptz null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "hosts" drop column "session_id", drop column "session_replica", drop column "session_started_at";`,
    );
  }
}
