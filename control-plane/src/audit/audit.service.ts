import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { Workspace } from '../account/workspace.entity.ts';
import { requireKey, requireRole } from '../auth/access.ts';
import type { Actor } from '../auth/actor.ts';
import { HttpError, Invalid, NotFound } from '../http/errors.ts';
import type { AuditRecorder } from './audit-recorder.ts';
import type { AuditEntry, AuditPage, AuditQuery } from './audit.schemas.ts';
import {
  auditExportBatch,
  insertAuditEntries,
  workspaceAuditPage,
  type AuditPosition,
  type AuditRow,
} from './audit.store.ts';

/** The operator's actor name and `via` in the log. */
export const OPERATOR = 'vpctl';
/** Entries per batch of an export (read and written before the next is read). */
const EXPORT_BATCH = 1000;

/** What an operator's command changes: the workspace (a handle; none for the appliance's own) and the resource. */
export interface OperatorTarget {
  workspace?: string;
  resource: string;
}

/**
 * The audit log: a workspace's entries for its owners and admins (GET /api/audit), the operator's export of every
 * entry (vpctl audit export), and the operator's own changes recorded as `vpctl` (the API's are recorded by the
 * audit trail middleware).
 */
export class AuditService {
  private readonly em: EntityManager;
  private readonly recorder: AuditRecorder | undefined;

  /** `recorder`: the process's writer, flushed before a read so a page shows every change this process answered. */
  constructor(em: EntityManager, recorder?: AuditRecorder) {
    this.em = em;
    this.recorder = recorder;
  }

  async list(actor: Actor, query: z.output<typeof AuditQuery>): Promise<z.input<typeof AuditPage>> {
    const key = requireKey(actor);
    requireRole(actor, key.workspaceId, 'admin');
    if (query.from && query.to && Date.parse(query.from) >= Date.parse(query.to))
      throw Invalid('to: must be later than from');
    await this.recorder?.flush();
    const rows = await workspaceAuditPage(this.em, {
      workspaceId: key.workspaceId,
      actor: query.actor,
      action: query.action,
      resource: query.resource,
      from: query.from === undefined ? undefined : new Date(query.from),
      to: query.to === undefined ? undefined : new Date(query.to),
      after: query.cursor === undefined ? undefined : parseCursor(query.cursor),
      limit: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      entries: page.map(entryView),
      nextCursor: rows.length > query.limit && last ? cursorOf(last) : null,
    };
  }

  /**
   * Writes every entry (or one workspace's), at or after `since`, oldest first, one JSON line each, through `write`
   * (which waits for the output to drain): a batch in memory at a time, all from one snapshot of the table. Returns
   * how many were written.
   */
  async exportLines(
    options: { workspace?: string; since?: Date },
    write: (lines: string) => Promise<void>,
  ): Promise<number> {
    const workspaceId = options.workspace === undefined ? undefined : (await this.findWorkspace(options.workspace)).id;
    return this.em.fork().transactional(
      async (em) => {
        let after: AuditPosition | undefined;
        let count = 0;
        for (;;) {
          const rows = await auditExportBatch(em, { workspaceId, since: options.since, after, limit: EXPORT_BATCH });
          if (rows.length > 0) await write(rows.map((row) => `${JSON.stringify(entryView(row))}\n`).join(''));
          count += rows.length;
          const last = rows.at(-1);
          if (!last || rows.length < EXPORT_BATCH) return count;
          after = { at: last.at, id: last.id };
        }
      },
      { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true },
    );
  }

  /**
   * Runs an operator's change (`work`, through the services) and records it as `vpctl` with `target`, or what `made`
   * says of the result (the key created, the workspace of a host found by its name): outcome 200, or the status of the
   * error it failed with (500 for an unexpected one), which is thrown on.
   */
  async asOperator<T>(
    action: string,
    target: OperatorTarget,
    work: () => Promise<T>,
    made?: (result: T) => OperatorTarget,
  ): Promise<T> {
    const at = new Date();
    let result: T;
    try {
      result = await work();
    } catch (error) {
      const outcome = error instanceof HttpError ? error.status : 500;
      // The command's own error is the one reported (a database that is down fails both).
      await this.recordOperator(at, action, target.workspace, target.resource, outcome).catch(() => undefined);
      throw error;
    }
    const done = made?.(result) ?? target;
    await this.recordOperator(at, action, done.workspace, done.resource, 200);
    return result;
  }

  private async recordOperator(
    at: Date,
    action: string,
    workspaceHandle: string | undefined,
    resource: string,
    outcome: number,
  ): Promise<void> {
    // A fork of its own: the command's work may have left its EntityManager mid-failure.
    const em = this.em.fork();
    const workspace = workspaceHandle === undefined ? null : await em.findOne(Workspace, { handle: workspaceHandle });
    await insertAuditEntries(em, [
      {
        at,
        workspaceId: workspace?.id ?? null,
        actorId: null,
        actorName: OPERATOR,
        via: OPERATOR,
        clientAddress: null,
        action,
        resource: resource.slice(0, 512),
        outcome,
        requestId: null,
      },
    ]);
  }

  private async findWorkspace(handle: string): Promise<Workspace> {
    const workspace = await this.em.findOne(Workspace, { handle });
    if (!workspace) throw NotFound(`Workspace "${handle}" not found`);
    return workspace;
  }
}

/** An entry as the API shows it and the export writes it. */
export function entryView(row: AuditRow): z.input<typeof AuditEntry> {
  return {
    id: row.id,
    at: new Date(row.at).toISOString(),
    workspace: row.workspace_handle,
    actor: row.actor_name === null ? null : { id: row.actor_id, username: row.actor_name },
    via: row.via,
    clientAddress: row.client_address,
    action: row.action,
    resource: row.resource,
    outcome: row.outcome,
    requestId: row.request_id,
  };
}

const cursorOf = (row: AuditRow) => `${new Date(row.at).toISOString()}_${row.id}`;

/** A nextCursor as list made it: the last entry's time and id. */
function parseCursor(cursor: string): AuditPosition {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)_([1-9]\d{0,17})$/.exec(cursor);
  const at = new Date(match?.[1] ?? Number.NaN);
  if (!match || !(at.getTime() >= 0)) throw Invalid('cursor: is not a nextCursor of this list');
  return { at, id: match[2]! };
}
