import { Migration } from '@mikro-orm/migrations';

export class Migration20261123013707_job_memory extends Migration {

  override name = 'Migration20261123013707_job_memory';

  override up(): void | Promise<void> {
    this.addSql(`alter table "jobs" add "memory_bytes" bigint null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "jobs" drop column "memory_bytes";`);
  }

}
