import { tooManyRequests, type RateLimiter, type RateWait } from '../http/rate-limit.ts';
import type { FailedAuthLimit } from './authenticator.ts';

/**
 * Wrong passwords count against the API's failed-authentication limit (AUTH_FAILURE_LIMIT per rate-limit window, in
 * PostgreSQL, every replica together): the client address's bucket, which invalid API keys fill too, and the
 * username's. Over either, sign-ins answer 429 with Retry-After, even with the right password, until the window allows
 * again. The refusal is remembered per process (as the authenticator does) so a blocked address or user costs no
 * scrypt and no count meanwhile; another replica learns of it at its first failure there.
 */
export class LoginLockout {
  private readonly limit: FailedAuthLimit | undefined;

  constructor(limit: FailedAuthLimit | undefined) {
    this.limit = limit;
  }

  /** 429 while the address or the user is known to be over its failures. */
  refuseIfBlocked(clientAddress: string, username: string): void {
    if (!this.limit) return;
    const now = Date.now();
    const blocked = blockedOf(this.limit.limiter);
    for (const bucket of buckets(clientAddress, username)) {
      const until = blocked.get(bucket);
      if (until === undefined) continue;
      if (until > now) throw this.refusal({ waitMs: until - now, nowMs: now });
      blocked.delete(bucket);
    }
  }

  /** Charges one failure to the address and to the user; 429 when either had none left. */
  async countFailure(clientAddress: string, username: string): Promise<void> {
    if (!this.limit) return;
    const blocked = blockedOf(this.limit.limiter);
    let longest: RateWait | undefined;
    for (const bucket of buckets(clientAddress, username)) {
      const refused = await this.limit.limiter.count(bucket, this.limit.perWindow);
      if (!refused) continue;
      remember(blocked, bucket, Date.now() + refused.waitMs);
      if (!longest || refused.waitMs > longest.waitMs) longest = refused;
    }
    if (longest) throw this.refusal(longest);
  }

  private refusal(wait: RateWait) {
    return tooManyRequests(
      `Too many failed sign-ins from this address or for this user (${this.limit!.perWindow} per ${this.limit!.windowSeconds} s)`,
      wait,
    );
  }
}

function buckets(clientAddress: string, username: string): string[] {
  return [`auth-failures:ip:${clientAddress}`, `auth-failures:user:${username.toLowerCase().slice(0, 64)}`];
}

/** Blocked buckets per limiter (one per server), until when on this process's clock. */
const blockedByLimiter = new WeakMap<RateLimiter, Map<string, number>>();
const MAX_BLOCKED = 10_000;

function blockedOf(limiter: RateLimiter): Map<string, number> {
  let blocked = blockedByLimiter.get(limiter);
  if (!blocked) blockedByLimiter.set(limiter, (blocked = new Map<string, number>()));
  return blocked;
}

function remember(blocked: Map<string, number>, bucket: string, until: number): void {
  if (blocked.size >= MAX_BLOCKED) {
    for (const [name, expiry] of blocked) if (expiry <= Date.now()) blocked.delete(name);
    if (blocked.size >= MAX_BLOCKED) blocked.delete(blocked.keys().next().value!);
  }
  blocked.set(bucket, until);
}
