// The hosts table's hand-written SQL (enrolment, renames and removal go through the ORM's Host entity in
// hosts/host.service.ts). Most of it is the host row's record of its worker socket, shared by every replica: which
// session (socket) is the host now, on which replica, since when; state, last heartbeat, hardware, agent version and
// exporters. The newest hello takes the host over, and every write a session makes is checked against it in the same
// transaction, so a socket that was taken over (on this replica or another) changes nothing, even before its replica
// has closed it. The rest is the look-up of what live hosts offer (scheduler/host-offers.ts).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Hardware, HostLoad } from '@vp/protocol';
import { pgArray, query } from '../db/sql.ts';

/**
 * What a host job needs of a host: a GPU type ('cpu': none); for an export, the format's toolchain; for a deployment,
 * the service and a region (hosts of no region serve every one).
 */
export interface HostOffer {
  /** A GPU type ID, ANY_GPU, or 'cpu'. */
  gpuType: string;
  /** Only a GPU no running job holds now counts (a job would start at once rather than wait). */
  freeGpu?: boolean;
  toolchain?: string;
  service?: string;
  region?: string;
}

/** HostOffer.gpuType: a GPU of any type. */
export const ANY_GPU = '*';

/** Announced with the host id when a new session took a host over: the replica holding the older socket closes it. */
export const HOST_SESSIONS_CHANNEL = 'vp_host_sessions';

export interface HostSession {
  hostId: string;
  /** Unique per socket. */
  sessionId: string;
  /** The control-plane process holding the socket. */
  replica: string;
}

/**
 * Makes `session` its host's current one (connected, with the hello's hardware and agent version) and announces the
 * takeover; run in the transaction that squares the host's jobs with its hello, so the newest session's view is the
 * one that lands.
 * The host row stays locked until commit: a concurrent hello of the same host waits, then takes over in turn.
 * Null when the host no longer exists; else the session it replaced, if any.
 */
export async function takeOverHost(
  tx: EntityManager,
  session: HostSession,
  hello: { hardware: Hardware; agentVersion: string },
): Promise<{ replaced: { sessionId: string; replica: string | null } | null; region: string | null } | null> {
  const [row] = await query<{ previous_id: string | null; previous_replica: string | null; region: string | null }>(
    tx,
    `with old as (select id, session_id, session_replica from hosts where id = ? for update)
     update hosts h set state = 'connected', hardware = ?::jsonb, agent_version = ?, last_heartbeat_at = now(),
       session_id = ?, session_replica = ?, session_started_at = now(), updated_at = now()
     from old where h.id = old.id returning old.session_id as previous_id, old.session_replica as previous_replica, h.region`,
    [session.hostId, JSON.stringify(hello.hardware), hello.agentVersion, session.sessionId, session.replica],
  );
  if (!row) return null;
  await query(tx, 'select pg_notify(?, ?)', [HOST_SESSIONS_CHANNEL, session.hostId]);
  return {
    replaced: row.previous_id ? { sessionId: row.previous_id, replica: row.previous_replica } : null,
    region: row.region,
  };
}

/** Thrown instead of writing for a session whose host another session has taken over. */
export class SessionReplaced extends Error {
  constructor(session: HostSession) {
    super(`session ${session.sessionId} of host ${session.hostId} was replaced`);
  }
}

/**
 * Runs `work` in a transaction that holds the host row (FOR KEY SHARE) while `session` is its current one, so a takeover
 * waits for it to commit; throws SessionReplaced, without running it, once another session has the host.
 */
export async function asCurrentSession<T>(
  em: EntityManager,
  session: HostSession,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  return em.transactional(async (tx) => {
    if (!(await isCurrentSession(tx, session))) throw new SessionReplaced(session);
    return work(tx);
  });
}

/**
 * In a transaction, also holds the host row until it ends, so no takeover (FOR UPDATE) lands in between. KEY SHARE:
 * the weakest lock that still keeps the takeover out, so other updates of the row (a heartbeat) do not wait.
 */
export async function isCurrentSession(em: EntityManager, session: HostSession): Promise<boolean> {
  const rows = await query(em, 'select 1 from hosts where id = ? and session_id = ? for key share', [
    session.hostId,
    session.sessionId,
  ]);
  return rows.length > 0;
}

/**
 * Those of `sessions` that are still their host's current one (their ids), each held so until the transaction ends as
 * isCurrentSession holds one: a dispatch checks all its hosts in one statement.
 */
export async function currentSessions(tx: EntityManager, sessions: HostSession[]): Promise<Set<string>> {
  if (sessions.length === 0) return new Set();
  const rows = await query<{ session_id: string }>(
    tx,
    `select h.session_id from hosts h join unnest(?::text[], ?::text[]) as s(host_id, session_id)
       on h.id = s.host_id and h.session_id = s.session_id order by h.id for key share of h`,
    [pgArray(sessions.map((session) => session.hostId)), pgArray(sessions.map((session) => session.sessionId))],
  );
  return new Set(rows.map((row) => row.session_id));
}

/**
 * The server's clock, not the agent's `at`: hosts' clocks may drift, liveness is judged here. The load it carried
 * replaces the last; one without (an older agent) leaves it.
 */
export async function recordHeartbeat(em: EntityManager, hostId: string, load: HostLoad | undefined): Promise<void> {
  await query(em, 'update hosts set last_heartbeat_at = now(), load = coalesce(?::jsonb, load) where id = ?', [
    load === undefined ? null : JSON.stringify(load),
    hostId,
  ]);
}

/**
 * The agent's `capabilities`: what its host exports to and the services it runs, kept for the hosts view and for
 * export and deployment requests (host-offers.ts).
 */
export async function recordCapabilities(
  em: EntityManager,
  hostId: string,
  capabilities: { exporters: string[]; missingExporters: Record<string, string>; services: string[] },
): Promise<void> {
  await query(
    em,
    'update hosts set exporters = ?::text[], missing_exporters = ?::jsonb, services = ?::text[], updated_at = now() where id = ?',
    [
      pgArray(capabilities.exporters),
      JSON.stringify(capabilities.missingExporters),
      pgArray(capabilities.services),
      hostId,
    ],
  );
}

/** The session's socket closed: the host is disconnected, unless a newer session has it already. */
export async function endSession(em: EntityManager, session: HostSession): Promise<void> {
  await query(
    em,
    `update hosts set state = 'disconnected', session_id = null, session_replica = null, session_started_at = null, updated_at = now()
     where id = ? and session_id = ?`,
    [session.hostId, session.sessionId],
  );
}

/**
 * Whether a live connected host (heard from within `graceSeconds`) the workspace may use offers what `offer` asks
 * (see someHostOffers in scheduler/host-offers.ts).
 */
export async function someHostOffersNow(
  em: EntityManager,
  workspaceId: string,
  offer: HostOffer,
  graceSeconds: number,
): Promise<boolean> {
  const [row] = await query<{ found: boolean }>(
    em,
    `select exists (
       select 1 from hosts h where h.state = 'connected' and h.last_heartbeat_at > now() - make_interval(secs => ?)
         and (h.workspace_id is null or h.workspace_id = ?)
         and (? = 'cpu' or exists (select 1 from jsonb_array_elements(coalesce(h.hardware->'gpus', '[]'::jsonb)) g where (? = '${ANY_GPU}' or g->>'typeId' = ?)
           and not (? and exists (select 1 from jobs j where j.host_id = h.id and j.status = 'running' and j.gpu_indexes @> jsonb_build_array(g->'index')))))
         and (?::varchar is null or ? = any(h.exporters))
         and (?::varchar is null or ? = any(h.services))
         and (?::varchar is null or h.region is null or h.region = ?)
     ) as found`,
    [
      graceSeconds,
      workspaceId,
      offer.gpuType,
      offer.gpuType,
      offer.gpuType,
      offer.freeGpu ?? false,
      offer.toolchain ?? null,
      offer.toolchain ?? null,
      offer.service ?? null,
      offer.service ?? null,
      offer.region ?? null,
      offer.region ?? null,
    ],
  );
  return row.found;
}

/** A workspace's own hosts and the appliance-wide pool's: the hosts its owners and admins may know of. */
const WORKSPACE_AND_POOL = 'h.workspace_id = ? or h.workspace_id is null';
const workspaceScope = (workspaceId: string | undefined) =>
  workspaceId === undefined ? '' : `where ${WORKSPACE_AND_POOL}`;
const workspaceParams = (workspaceId: string | undefined) => (workspaceId === undefined ? [] : [workspaceId]);

/**
 * Every host with its workspace's handle (null: shared), state and last heartbeat, and whether it is alive (connected,
 * heard within graceSeconds), by name; with `workspaceId`, only that workspace's and the pool's.
 */
export async function hostsWithLiveness(
  em: EntityManager,
  graceSeconds: number,
  workspaceId?: string,
): Promise<
  Array<{ name: string; workspace: string | null; state: string; last_heartbeat_at: string | null; alive: boolean }>
> {
  return query<{
    name: string;
    workspace: string | null;
    state: string;
    last_heartbeat_at: string | null;
    alive: boolean;
  }>(
    em,
    `select h.name, w.handle as workspace, h.state, h.last_heartbeat_at,
       (h.state = 'connected' and h.last_heartbeat_at > now() - make_interval(secs => ?)) as alive
     from hosts h left join workspaces w on w.id = h.workspace_id ${workspaceScope(workspaceId)} order by h.name`,
    [graceSeconds, ...workspaceParams(workspaceId)],
  );
}

/**
 * The hosts whose agent reported its version, with their workspace's handle (null: shared), by name; with
 * `workspaceId`, only that workspace's and the pool's.
 */
export async function hostAgentVersions(
  em: EntityManager,
  workspaceId?: string,
): Promise<Array<{ name: string; workspace: string | null; agent_version: string }>> {
  const scope = workspaceId === undefined ? '' : `and (${WORKSPACE_AND_POOL})`;
  return query<{ name: string; workspace: string | null; agent_version: string }>(
    em,
    `select h.name, w.handle as workspace, h.agent_version from hosts h left join workspaces w on w.id = h.workspace_id
     where h.agent_version is not null ${scope} order by h.name`,
    workspaceParams(workspaceId),
  );
}

/** The replica holding the connected host's worker socket (null: none recorded), if the host is connected. */
export async function connectedHostReplica(
  em: EntityManager,
  hostId: string,
): Promise<{ session_replica: string | null } | undefined> {
  const [host] = await query<{ session_replica: string | null }>(
    em,
    `select session_replica from hosts where id = ? and state = 'connected'`,
    [hostId],
  );
  return host;
}

/** Locks the host's row until the transaction ends, as a session's writes take it (before its jobs' rows). */
export async function lockHostRow(tx: EntityManager, hostId: string): Promise<void> {
  await query(tx, 'select id from hosts where id = ? for update', [hostId]);
}

/** Whether the host exists and runs `service` (an environment such as 'inference'), connected or not. */
export async function hostRunsService(em: EntityManager, hostId: string, service: string): Promise<boolean> {
  const [host] = await query(em, 'select 1 from hosts where id = ? and ? = any(services)', [hostId, service]);
  return host !== undefined;
}

/**
 * The live connected hosts (heard from within `graceSeconds`) the workspace may use whose trainer environment lacks
 * the export format's toolchain: how many, and the reason the most recently heard of them reported, if any.
 */
export async function liveHostsLackingExporter(
  em: EntityManager,
  workspaceId: string,
  format: string,
  graceSeconds: number,
): Promise<{ hosts: number; reason: string | null }> {
  const [row] = await query<{ reason: string | null; hosts: string }>(
    em,
    `select (array_agg(h.missing_exporters->>? order by h.last_heartbeat_at desc) filter (where h.missing_exporters->>? is not null))[1] as reason, count(*) as hosts
     from hosts h where h.state = 'connected' and h.last_heartbeat_at > now() - make_interval(secs => ?) and (h.workspace_id is null or h.workspace_id = ?)
       and not (? = any(h.exporters))`,
    [format, format, graceSeconds, workspaceId, format],
  );
  return { hosts: Number(row?.hosts ?? 0), reason: row?.reason ?? null };
}

/** A host as the metrics show it: name (`workspace/name`, or the name alone in the pool), liveness, reports, jobs. */
export interface HostFigures {
  host: string;
  alive: boolean;
  state: string;
  gpus: unknown;
  load: Record<string, unknown> | null;
  agent_version: string | null;
  running: number;
}

/** Every host with what the metrics read of it; one query for all (a scrape of 1,000 hosts). */
export function hostFigures(em: EntityManager, graceSeconds: number): Promise<HostFigures[]> {
  return query<HostFigures>(
    em,
    `select case when w.handle is null then h.name else w.handle || '/' || h.name end as host, h.state,
       (h.state = 'connected' and h.last_heartbeat_at > now() - make_interval(secs => ?)) as alive,
       h.hardware -> 'gpus' as gpus, h.load, h.agent_version,
       (select count(*)::int from jobs j where j.host_id = h.id and j.status = 'running') as running
     from hosts h left join workspaces w on w.id = h.workspace_id`,
    [graceSeconds],
  );
}
