import { Migration } from '@mikro-orm/migrations';

export class Migration20261124060000_user_follows extends Migration {
  override name = 'Migration20261124060000_user_follows';

  override up(): void | Promise<void> {
    // Who follows whom (PATCH /api/users); a profile shows its follower count and whether the caller follows.
    this.addSql(`
      create table "user_follows" (
        "follower_id" varchar(24) not null references "users" ("id") on delete cascade,
        "followed_id" varchar(24) not null references "users" ("id") on delete cascade,
        "created_at" timestamptz not null default now(),
        primary key ("follower_id", "followed_id")
      );`);
    this.addSql(`create index "user_follows_followed_id_index" on "user_follows" ("followed_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "user_follows";`);
  }
}
