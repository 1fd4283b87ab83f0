// The audit_entries table: written in batches (audit-recorder.ts) and one at a time by vpctl, read a workspace's
// page at a time newest first (GET /api/audit), exported oldest first (vpctl audit export), purged past the retention.
import type { EntityManager } from '@mikro-orm/postgresql';
import { query } from '../db/sql.ts';

/** One entry as it is written. */
export interface AuditRecord {
  at: Date;
  /** The workspace whose owners and admins see it; null for the appliance's own (a failed sign-in of nobody known, a pool host). */
  workspaceId: string | null;
  actorId: string | null;
  actorName: string | null;
  /** How the actor acted: the API key's display prefix, `session` (the console) or `vpctl`. */
  via: string | null;
  clientAddress: string | null;
  action: string;
  resource: string;
  /** The HTTP status it was answered with (vpctl: 200, or the status of the error it reported). */
  outcome: number;
  requestId: string | null;
}

/** One entry as it is read, with its workspace's handle (null once the workspace is gone). */
export interface AuditRow {
  id: string;
  at: Date;
  workspace_id: string | null;
  workspace_handle: string | null;
  actor_id: string | null;
  actor_name: string | null;
  via: string | null;
  client_address: string | null;
  action: string;
  resource: string;
  outcome: number;
  request_id: string | null;
}

/** Where a keyset page starts: after this entry of the previous one. */
export interface AuditPosition {
  at: Date;
  id: string;
}

/** The columns and their types (a VALUES list is typed by them, not by the table). */
const COLUMNS = {
  at: 'timestamptz',
  workspace_id: 'varchar',
  actor_id: 'varchar',
  actor_name: 'varchar',
  via: 'varchar',
  client_address: 'varchar',
  action: 'varchar',
  resource: 'varchar',
  outcome: 'smallint',
  request_id: 'varchar',
};
const NAMES = Object.keys(COLUMNS).join(', ');
const TUPLE = `(${Object.values(COLUMNS)
  .map((type) => `?::${type}`)
  .join(', ')})`;
const SELECT = `select e.id::text as id, e.at, e.workspace_id, w.handle as workspace_handle, e.actor_id, e.actor_name,
  e.via, e.client_address, e.action, e.resource, e.outcome, e.request_id
  from audit_entries e left join workspaces w on w.id = e.workspace_id`;

/** Inserts the entries in one statement (at most a few hundred: 10 parameters each). */
export async function insertAuditEntries(em: EntityManager, rows: readonly AuditRecord[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.flatMap((row) => [
    row.at,
    row.workspaceId,
    row.actorId,
    row.actorName,
    row.via,
    row.clientAddress,
    row.action,
    row.resource,
    row.outcome,
    row.requestId,
  ]);
  await query(em, `insert into audit_entries (${NAMES}) values ${rows.map(() => TUPLE).join(', ')}`, values);
}

export interface AuditFilter {
  workspaceId: string;
  /** A username (or vpctl). */
  actor?: string;
  action?: string;
  /** This resource and those below it. */
  resource?: string;
  from?: Date;
  to?: Date;
  after?: AuditPosition;
  limit: number;
}

/** A page of one workspace's entries, newest first (the workspace, at, id index). */
export function workspaceAuditPage(em: EntityManager, filter: AuditFilter): Promise<AuditRow[]> {
  const where = ['e.workspace_id = ?'];
  const params: unknown[] = [filter.workspaceId];
  if (filter.actor !== undefined) {
    where.push('e.actor_name = ?');
    params.push(filter.actor);
  }
  if (filter.action !== undefined) {
    where.push('e.action = ?');
    params.push(filter.action);
  }
  if (filter.resource !== undefined) {
    where.push("(e.resource = ? or starts_with(e.resource, ? || '/'))");
    params.push(filter.resource, filter.resource);
  }
  if (filter.from) {
    where.push('e.at >= ?');
    params.push(filter.from);
  }
  if (filter.to) {
    where.push('e.at < ?');
    params.push(filter.to);
  }
  if (filter.after) {
    where.push('(e.at, e.id) < (?::timestamptz, ?::bigint)');
    params.push(filter.after.at, filter.after.id);
  }
  return query<AuditRow>(em, `${SELECT} where ${where.join(' and ')} order by e.at desc, e.id desc limit ?`, [
    ...params,
    filter.limit,
  ]);
}

/** A batch of the export, oldest first: every workspace's entries (and the appliance's), or one workspace's. */
export function auditExportBatch(
  em: EntityManager,
  filter: { workspaceId?: string; since?: Date; after?: AuditPosition; limit: number },
): Promise<AuditRow[]> {
  const where = ['true'];
  const params: unknown[] = [];
  if (filter.workspaceId !== undefined) {
    where.push('e.workspace_id = ?');
    params.push(filter.workspaceId);
  }
  if (filter.since) {
    where.push('e.at >= ?');
    params.push(filter.since);
  }
  if (filter.after) {
    where.push('(e.at, e.id) > (?::timestamptz, ?::bigint)');
    params.push(filter.after.at, filter.after.id);
  }
  return query<AuditRow>(em, `${SELECT} where ${where.join(' and ')} order by e.at, e.id limit ?`, [
    ...params,
    filter.limit,
  ]);
}

/**
 * Deletes up to `limit` of the oldest entries from before `before`; returns how many. Rows another replica's purge
 * holds are skipped, not waited for.
 */
export async function purgeAuditEntries(em: EntityManager, before: Date, limit: number): Promise<number> {
  const [row] = await query<{ n: number }>(
    em,
    `with doomed as (
       select id from audit_entries where at < ? order by at, id limit ? for update skip locked
     ), deleted as (
       delete from audit_entries e using doomed where e.id = doomed.id returning 1
     )
     select count(*)::int as n from deleted`,
    [before, limit],
  );
  return row?.n ?? 0;
}
