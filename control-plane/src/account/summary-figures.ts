import type { EntityManager } from '@mikro-orm/postgresql';
import type { Middleware } from 'koa';
import { Batcher } from '../db/batcher.ts';
import type { Notifications } from '../db/notifications.ts';
import type { AppState } from '../http/app-context.ts';
import { COUNTED_RESOURCES } from './account.schemas.ts';
import { figureRows } from './resource-count.store.ts';

/** Named in the resource_counts migration's trigger, which sends a workspace's id here when its figures change. */
export const SUMMARY_FIGURES_CHANNEL = 'vp_summary_figures';
/** Workspaces whose figures one process keeps; past this the cache starts over (an appliance has far fewer). */
const MAX_CACHED = 10_000;

export type ResourceCounts = Record<(typeof COUNTED_RESOURCES)[number], number>;

/** What the account summary reads from the database: the kept resource counts and the credit balance. */
export interface Figures {
  counts: ResourceCounts;
  creditsCents: number;
}

/**
 * The account summary's figures (the most frequent authenticated call). Counters, not counting: the database keeps
 * them (see ResourceCount). Once `listen` is called they are cached per workspace until PostgreSQL announces a change
 * on SUMMARY_FIGURES_CHANNEL (at its commit, to every replica) or a key of the workspace makes a request that may
 * write through this process (`forget`, before it is answered): a client reads its own changes at once from this
 * replica, and another replica's within the notification's delivery. Misses of concurrent requests share one
 * statement (see Batcher).
 */
export class SummaryFigures {
  private readonly em: EntityManager;
  private readonly reads = new Batcher<string, Figures>((workspaceIds) => this.readMany(workspaceIds));
  private readonly cache = new Map<string, Figures>();
  private notifications: Notifications | undefined;
  /** The notification connection the cached figures were checked against. */
  private session: number | undefined;
  /** Bumped by every change heard of, so a read that started before one does not fill the cache. */
  private generation = 0;

  constructor(em: EntityManager) {
    this.em = em;
  }

  listen(notifications: Notifications): void {
    this.notifications = notifications;
    notifications.on(SUMMARY_FIGURES_CHANNEL, (workspaceId) => this.forget(workspaceId));
  }

  async read(workspaceId: string): Promise<Figures> {
    // Nothing is served that a lost connection may have missed a change to.
    const session = this.notifications?.session;
    if (session !== this.session) {
      this.forgetAll();
      this.session = session;
    }
    if (session === undefined) return this.reads.submit(workspaceId);
    const cached = this.cache.get(workspaceId);
    if (cached) return cached;
    const generation = this.generation;
    const figures = await this.reads.submit(workspaceId);
    if (generation === this.generation && session === this.notifications?.session) {
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      this.cache.set(workspaceId, figures);
    }
    return figures;
  }

  forget(workspaceId: string): void {
    this.generation++;
    this.cache.delete(workspaceId);
  }

  private forgetAll(): void {
    this.generation++;
    this.cache.clear();
  }

  private async readMany(workspaceIds: string[]): Promise<Figures[]> {
    const unique = [...new Set(workspaceIds)];
    const rows = await figureRows(this.em, unique);
    const figures = new Map<string, Figures>(
      unique.map((id) => [
        id,
        { counts: Object.fromEntries(COUNTED_RESOURCES.map((kind) => [kind, 0])) as ResourceCounts, creditsCents: 0 },
      ]),
    );
    for (const row of rows) {
      const entry = figures.get(row.workspace_id)!;
      if (row.kind) entry.counts[row.kind] = row.total ?? 0;
      entry.creditsCents = Number(row.balance_cents ?? 0);
    }
    return workspaceIds.map((id) => figures.get(id)!);
  }
}

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A key reaches only its own workspace (see roleIn), so whatever a key's other requests change is that workspace's:
 * its figures are forgotten once the handler is done (its transaction committed), before the answer goes out.
 */
export function forgetFiguresOnWrite(figures: SummaryFigures): Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      const actor = ctx.state.actor;
      if (actor?.kind === 'key' && !READS.has(ctx.method)) figures.forget(actor.workspaceId);
    }
  };
}
