import { Migration } from '@mikro-orm/migrations';

/**
 * Console sign-in (auth/session.*): users' scrypt password hashes, sessions (only the SHA-256 of the cookie value is
 * kept, with a fixed expiry and the workspace the session acts in), and OIDC sign-ins under way (state → PKCE
 * verifier, nonce and where to return, for the few minutes between the redirect to the provider and its callback).
 */
export class Migration20261207000000_console_sessions extends Migration {
  override name = 'Migration20261207000000_console_sessions';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "user_passwords" ("user_id" varchar(24) not null references "users" ("id") on delete cascade, "hash" varchar(255) not null, "updated_at" timestamptz not null default now(), primary key ("user_id"));`,
    );
    this.addSql(
      `create table "auth_sessions" ("id" varchar(24) not null, "token_hash" char(64) not null, "user_id" varchar(24) not null references "users" ("id") on delete cascade, "workspace_id" varchar(24) not null references "workspaces" ("id") on delete cascade, "method" varchar(16) not null, "created_at" timestamptz not null default now(), "expires_at" timestamptz not null, primary key ("id"), constraint "auth_sessions_token_hash_unique" unique ("token_hash"));`,
    );
    this.addSql(`create index "auth_sessions_user_id_index" on "auth_sessions" ("user_id");`);
    this.addSql(`create index "auth_sessions_expires_at_index" on "auth_sessions" ("expires_at");`);
    this.addSql(
      `create table "auth_oidc_attempts" ("state" varchar(64) not null, "code_verifier" varchar(128) not null, "nonce" varchar(64) not null, "return_to" varchar(2048) not null, "expires_at" timestamptz not null, primary key ("state"));`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "auth_oidc_attempts";`);
    this.addSql(`drop table if exists "auth_sessions";`);
    this.addSql(`drop table if exists "user_passwords";`);
  }
}
