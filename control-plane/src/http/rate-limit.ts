import type { EntityManager } from '@mikro-orm/postgresql';
import type { RateCategory } from '@vp/config';
import { Batcher } from '../db/batcher.ts';
import { HttpError } from './errors.ts';
import { dropWindowsBefore, takeFromBuckets } from './rate-limit-window.store.ts';

interface TakeRow {
  allowed: boolean;
  current_hits: number;
  previous_hits: number;
  window_start_ms: string;
  now_ms: string;
}

export interface RateLimitSettings {
  windowSeconds: number;
  limits: Record<RateCategory, number>;
}

interface Take {
  bucket: string;
  limit: number;
}

/**
 * Sliding-window limits shared by every replica: counters live in PostgreSQL (an unlogged table,
 * updated by `rate_limit_take`), and the database clock is the only clock. The estimate is previous
 * window × its remaining share + current window; rejected requests are not counted, so a client that
 * waits as told gets through. Concurrent takes are coalesced (see Batcher): a busy replica pays one
 * round trip per batch and one counter update per bucket in it rather than per request, and every take is
 * still counted before it is answered, so no replica admits more than the limit.
 */
export class RateLimiter {
  private readonly em: EntityManager;
  private readonly settings: RateLimitSettings;
  private readonly takes = new Batcher<Take, TakeRow>((batch) => this.takeMany(batch));

  constructor(em: EntityManager, settings: RateLimitSettings) {
    this.em = em;
    this.settings = settings;
  }

  async take(subject: string, category: RateCategory): Promise<void> {
    const limit = this.settings.limits[category];
    const refused = await this.count(`${category}:${subject}`, limit);
    if (refused)
      throw tooManyRequests(
        `Rate limit exceeded for ${category} requests (${limit} per ${this.settings.windowSeconds} s)`,
        refused,
      );
  }

  /** Counts one hit in `bucket` when it has room for it; when it has none, how long until it has (nothing counted). */
  async count(bucket: string, limit: number): Promise<RateWait | undefined> {
    const row = await this.takes.submit({ bucket, limit });
    if (row.allowed) return undefined;
    return {
      waitMs: millisecondsUntilAllowed(row, limit, this.settings.windowSeconds * 1000),
      nowMs: Number(row.now_ms),
    };
  }

  /**
   * Counts a batch in one statement, a bucket's takes together, the buckets sorted so that two replicas' batches
   * lock counter rows in the same order and cannot deadlock; answers in the batch's own order.
   */
  private async takeMany(batch: Take[]): Promise<TakeRow[]> {
    const byBucket = new Map<string, number[]>();
    batch.forEach((take, i) => (byBucket.get(take.bucket) ?? byBucket.set(take.bucket, []).get(take.bucket)!).push(i));
    const buckets = [...byBucket.keys()].sort();
    const rows = await takeFromBuckets(
      this.em,
      buckets.map((bucket) => [bucket, batch[byBucket.get(bucket)![0]].limit, byBucket.get(bucket)!.length]),
      this.settings.windowSeconds * 1000,
    );
    const answers = Array.from<TakeRow>({ length: batch.length });
    buckets.forEach((bucket, b) =>
      byBucket.get(bucket)!.forEach((i, nth) => (answers[i] = { ...rows[b], allowed: nth < rows[b].allowed })),
    );
    return answers;
  }

  /** Drops windows too old to weigh in any estimate. */
  async prune(): Promise<void> {
    await dropWindowsBefore(this.em, Date.now() - 3 * this.settings.windowSeconds * 1000);
  }
}

/** How long a refused caller waits, from `nowMs` (the clock that counted). */
export interface RateWait {
  waitMs: number;
  nowMs: number;
}

/** The 429 of a limit: `<reason>; retry in N s`, with retryAfter and resetAt in the body and the headers. */
export function tooManyRequests(reason: string, wait: RateWait): HttpError {
  const retryAfter = Math.max(1, Math.ceil(wait.waitMs / 1000));
  const resetAt = new Date(wait.nowMs + wait.waitMs).toISOString();
  return new HttpError(
    429,
    `${reason}; retry in ${retryAfter} s`,
    { retryAfter, resetAt },
    { 'Retry-After': String(retryAfter), 'X-RateLimit-Reset': resetAt },
  );
}

/** When one more request fits: prev × (1 − elapsed) + current + 1 ≤ limit, possibly in the next window. */
function millisecondsUntilAllowed(row: TakeRow, limit: number, windowMs: number): number {
  const now = Number(row.now_ms);
  const windowStart = Number(row.window_start_ms);
  const fractionNeeded = (previous: number, current: number) =>
    previous === 0 ? 0 : Math.max(0, 1 - (limit - 1 - current) / previous);
  if (row.current_hits + 1 <= limit) {
    const fraction = fractionNeeded(row.previous_hits, row.current_hits);
    if (fraction < 1) return Math.max(0, windowStart + fraction * windowMs - now);
  }
  const nextWindowStart = windowStart + windowMs;
  return nextWindowStart + fractionNeeded(row.current_hits, 0) * windowMs - now;
}
