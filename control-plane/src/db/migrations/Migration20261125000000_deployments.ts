import { Migration } from '@mikro-orm/migrations';

export class Migration20261125000000_deployments extends Migration {
  override name = 'Migration20261125000000_deployments';

  override up(): void | Promise<void> {
    // Where a host is (one of the spec's deployment regions; null: it serves every region) and the services it can run.
    this.addSql(`alter table "hosts" add "region" varchar(32) null, add "services" text[] not null default '{}';`);
    // What a host job needs of its host besides GPUs and memory: a region (null: any) and a service it can run.
    this.addSql(`alter table "jobs" add "region" varchar(32) null, add "service" varchar(16) null;`);
    // A dedicated inference endpoint. desired: what its owner asked for (running or stopped); status: where it is.
    // scaled_to_zero: a default-size deployment stopped for idleness, woken by its next request.
    this.addSql(`create table "deployments" (
      "id" varchar(24) not null primary key,
      "workspace_id" varchar(24) not null references "workspaces" ("id") on delete cascade,
      "model_id" varchar(24) not null references "models" ("id") on delete cascade,
      "slug" varchar(128) not null,
      "name" varchar(128) not null,
      "region" varchar(32) not null,
      "cpu" real not null default 1,
      "memory_gi" real not null default 2,
      "metadata" jsonb not null default '{}',
      "status" varchar(16) not null default 'creating' check ("status" in ('creating', 'deploying', 'ready', 'stopping', 'stopped', 'failed')),
      "status_message" text null,
      "desired" varchar(16) not null default 'running' check ("desired" in ('running', 'stopped')),
      "scaled_to_zero" boolean not null default false,
      "api_key_id" varchar(24) null references "api_keys" ("id") on delete set null,
      "camera_url" text null,
      "camera_applying" boolean not null default false,
      "last_request_at" timestamptz null,
      "deployed_at" timestamptz null,
      "created_at" timestamptz not null default now(),
      "updated_at" timestamptz not null default now());`);
    this.addSql(
      `create unique index "deployments_workspace_id_slug_unique" on "deployments" ("workspace_id", "slug");`,
    );
    this.addSql(`create index "deployments_model_id_index" on "deployments" ("model_id");`);
    // A deployment's own key (apiKeyId): it reaches that deployment's service URL and nothing else.
    this.addSql(
      `alter table "api_keys" add "deployment_id" varchar(24) null references "deployments" ("id") on delete cascade;`,
    );
    // One inference server of a deployment: a service host job. live: the one taking traffic (at most one per
    // deployment); starting: a new one (create, start, replace, wake) until it passes its health check.
    this.addSql(`create table "deployment_revisions" (
      "id" varchar(24) not null primary key,
      "deployment_id" varchar(24) not null references "deployments" ("id") on delete cascade,
      "number" int not null,
      "model_id" varchar(24) not null references "models" ("id") on delete cascade,
      "export_id" varchar(24) null references "model_exports" ("id") on delete set null,
      "cpu" real not null,
      "memory_gi" real not null,
      "job_id" varchar(24) null references "jobs" ("id") on delete set null,
      "token" varchar(64) not null,
      "service_url" varchar(2048) null,
      "state" varchar(16) not null default 'starting' check ("state" in ('starting', 'live', 'retired', 'failed')),
      "error" text null,
      "created_at" timestamptz not null default now(),
      "live_at" timestamptz null,
      "retired_at" timestamptz null);`);
    this.addSql(
      `create unique index "deployment_revisions_number_unique" on "deployment_revisions" ("deployment_id", "number");`,
    );
    this.addSql(
      `create unique index "deployment_revisions_one_live" on "deployment_revisions" ("deployment_id") where "state" = 'live';`,
    );
    this.addSql(`create index "deployment_revisions_job_id_index" on "deployment_revisions" ("job_id");`);
    // Every request a deployment answered (through the proxy or its service URL): metrics and request logs.
    this.addSql(`create table "deployment_requests" (
      "id" bigserial primary key,
      "deployment_id" varchar(24) not null references "deployments" ("id") on delete cascade,
      "at" timestamptz not null default now(),
      "method" varchar(8) not null,
      "path" varchar(512) not null,
      "status" smallint not null,
      "latency_ms" real not null,
      "request_bytes" bigint not null default 0,
      "response_bytes" bigint not null default 0,
      "user_agent" varchar(512) null,
      "via" varchar(8) not null check ("via" in ('proxy', 'service')));`);
    this.addSql(
      `create index "deployment_requests_deployment_id_at_index" on "deployment_requests" ("deployment_id", "at");`,
    );
    // What happened to a deployment (status changes, revisions, health failures, rollbacks) and what its servers logged.
    this.addSql(`create table "deployment_events" (
      "id" bigserial primary key,
      "deployment_id" varchar(24) not null references "deployments" ("id") on delete cascade,
      "at" timestamptz not null default now(),
      "severity" varchar(16) not null check ("severity" in ('DEFAULT', 'DEBUG', 'INFO', 'NOTICE', 'WARNING', 'ERROR', 'CRITICAL', 'ALERT', 'EMERGENCY')),
      "message" text not null);`);
    this.addSql(
      `create index "deployment_events_deployment_id_at_index" on "deployment_events" ("deployment_id", "at");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table "deployment_events";`);
    this.addSql(`drop table "deployment_requests";`);
    this.addSql(`drop table "deployment_revisions";`);
    this.addSql(`alter table "api_keys" drop column "deployment_id";`);
    this.addSql(`drop table "deployments";`);
    this.addSql(`alter table "jobs" drop column "region", drop column "service";`);
    this.addSql(`alter table "hosts" drop column "region", drop column "services";`);
  }
}
