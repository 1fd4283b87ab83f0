import { Migration } from '@mikro-orm/migrations';

export class Migration20261128000000_host_agent_version extends Migration {
  override name = 'Migration20261128000000_host_agent_version';

  override up(): void | Promise<void> {
    // The agent's version as it last connected (its hello's agentVersion): an upgrade tells which hosts to upgrade.
    this.addSql(`alter table "hosts" add "agent_version" varchar(64) null;`);
    // Replicas record the release version, now the bundle's (a --version of the operator's), as long as an agent's.
    this.addSql(`alter table "control_plane_replicas" alter column "version" type varchar(64);`);
  }

  override down(): void | Promise<void> {
    this.addSql(
      `alter table "control_plane_replicas" alter column "version" type varchar(32) using left("version", 32);`,
    );
    this.addSql(`alter table "hosts" drop column "agent_version";`);
  }
}
