import { defineEntity, p } from '@mikro-orm/core';
import { Workspace } from '../account/workspace.entity.ts';
import { BaseSchema } from '../db/base.entity.ts';

/** enrolling: connected by the operator, no key issued yet; disconnected: enrolled, no live socket; connected: socket up (WebSocket work). */
export const HOST_STATES = ['enrolling', 'disconnected', 'connected'] as const;
export type HostState = (typeof HOST_STATES)[number];

/** A machine that runs jobs: in the appliance-wide pool (no workspace) or private to one workspace. */
export const HostSchema = defineEntity({
  name: 'Host',
  tableName: 'hosts',
  extends: BaseSchema,
  // One name per scope; the pool (null workspace) is a scope of its own, hence NULLS NOT DISTINCT.
  uniques: [
    {
      name: 'hosts_workspace_id_name_unique',
      expression:
        'create unique index "hosts_workspace_id_name_unique" on "hosts" ("workspace_id", "name") nulls not distinct',
    },
  ],
  properties: {
    workspace: () => p.manyToOne(Workspace).deleteRule('cascade').nullable(),
    name: p.string().length(63),
    state: p.enum(HOST_STATES).default('enrolling'),
    /** The machine's own hostname, as the agent reported it when it enrolled. */
    hostname: p.string().length(255).nullable(),
    lastHeartbeatAt: p.datetime().nullable(),
    /** The agent's last hardware report; its shape is the worker protocol's. */
    hardware: p.json<Record<string, unknown>>().nullable(),
    /** The host's load at its last heartbeat that carried one (protocol 7); its shape is the worker protocol's. */
    load: p.json<Record<string, unknown>>().nullable(),
    /** The agent's version as it last connected (its hello); null before its first connection. */
    agentVersion: p.string().length(64).nullable(),
    /** The model formats its trainer environment exports to (its last `capabilities` message), and why not the others. */
    exporters: p.array().default([]),
    // Raw: a JSON property's default('{}') would be stored as the JSON string "{}".
    missingExporters: p.json<Record<string, string>>().defaultRaw(`'{}'`),
    /** The deployment region the host serves (set when it is connected); null: every region. */
    region: p.string().length(32).nullable(),
    /** The services it can run (its last `capabilities`): inference for deployments. */
    services: p.array().default([]),
    /** The worker socket that is the host now (the newest hello, on any replica); null while none is. */
    sessionId: p.string().length(24).nullable(),
    /** The control-plane process holding that socket. */
    sessionReplica: p.string().length(24).nullable(),
    sessionStartedAt: p.datetime().nullable(),
  },
});
export class Host extends HostSchema.class {}
HostSchema.setClass(Host);
