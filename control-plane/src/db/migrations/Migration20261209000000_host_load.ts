import { Migration } from '@mikro-orm/migrations';

export class Migration20261209000000_host_load extends Migration {
  override name = 'Migration20261209000000_host_load';

  override up(): void | Promise<void> {
    // The host's CPU, memory and GPU use at its last heartbeat (protocol 7), shown on the hosts page.
    this.addSql(`alter table "hosts" add "load" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "hosts" drop column "load";`);
  }
}
