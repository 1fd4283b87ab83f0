// The rate_limit_windows table (unlogged): each bucket's hit counters per window, updated only by the database
// function rate_limit_take.
import type { EntityManager } from '@mikro-orm/postgresql';

/** How one bucket's takes of a batch went: how many of them were allowed, the counts, the window and the database clock. */
export interface BucketRow {
  allowed: number;
  current_hits: number;
  previous_hits: number;
  window_start_ms: string;
  now_ms: string;
}

/** Counts every bucket of a batch (a JSON array of [bucket, limit, takes]) in one statement, in the batch's order. */
const TAKE_MANY_SQL = `
  select r.* from jsonb_array_elements(?::jsonb) with ordinality as b(take, ord),
    lateral rate_limit_take(b.take->>0, (b.take->>1)::int, ?, (b.take->>2)::int) r
  order by b.ord`;

/** Takes hits from each bucket of the batch, given as [bucket, limit, takes] (sorted by bucket), in windows of windowMs; one row per bucket, in order. */
export async function takeFromBuckets(
  em: EntityManager,
  batch: Array<[string, number, number]>,
  windowMs: number,
): Promise<BucketRow[]> {
  return em.getConnection().execute<BucketRow[]>(TAKE_MANY_SQL, [JSON.stringify(batch), windowMs]);
}

/** Drops the windows that started before `ms` (epoch milliseconds). */
export async function dropWindowsBefore(em: EntityManager, ms: number): Promise<void> {
  await em.getConnection().execute('delete from rate_limit_windows where window_start_ms < ?', [ms]);
}
