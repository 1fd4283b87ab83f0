import type { EntityManager } from '@mikro-orm/postgresql';
import type { RateCategory } from '@vp/config';
import { HttpError } from './errors.ts';

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

/**
 * Sliding-window limits shared by every replica: counters live in PostgreSQL (an unlogged table,
 * one round trip per request through `rate_limit_take`), and the database clock is the only clock.
 * The estimate is previous window × its remaining share + current window; rejected requests
 * are not counted, so a client that waits as told gets through.
 */
export class RateLimiter {
  private readonly em: EntityManager;
  private readonly settings: RateLimitSettings;

  constructor(em: EntityManager, settings: RateLimitSettings) {
    this.em = em;
    this.settings = settings;
  }

  async take(subject: string, category: RateCategory): Promise<void> {
    const limit = this.settings.limits[category];
    const windowMs = this.settings.windowSeconds * 1000;
    const [row] = await this.em
      .getConnection()
      .execute<TakeRow[]>('select * from rate_limit_take(?, ?, ?)', [`${category}:${subject}`, limit, windowMs]);
    if (row.allowed) return;
    const waitMs = millisecondsUntilAllowed(row, limit, windowMs);
    const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
    const resetAt = new Date(Number(row.now_ms) + waitMs).toISOString();
    throw new HttpError(
      429,
      `Rate limit exceeded for ${category} requests (${limit} per ${this.settings.windowSeconds} s); retry in ${retryAfter} s`,
      { retryAfter, resetAt },
      { 'Retry-After': String(retryAfter), 'X-RateLimit-Reset': resetAt },
    );
  }

  /** Drops windows too old to weigh in any estimate. */
  async prune(): Promise<void> {
    await this.em
      .getConnection()
      .execute('delete from rate_limit_windows where window_start_ms < ?', [Date.now() - 3 * this.settings.windowSeconds * 1000]);
  }
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
