import { Migration } from '@mikro-orm/migrations';

export class Migration20261127000000_control_plane_replicas extends Migration {
  override name = 'Migration20261127000000_control_plane_replicas';

  override up(): void | Promise<void> {
    // Each running control-plane process, seen every minute: `vpctl doctor` tells from it which replicas run, on
    // which version, and whether they sign with the same secret (a fingerprint of it, never the secret).
    this.addSql(`
      create table "control_plane_replicas" (
        "id" varchar(24) not null primary key,
        "hostname" varchar(255) not null,
        "version" varchar(32) not null,
        "secret_fingerprint" char(16) not null,
        "started_at" timestamptz not null default now(),
        "seen_at" timestamptz not null default now()
      );`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "control_plane_replicas";`);
  }
}
