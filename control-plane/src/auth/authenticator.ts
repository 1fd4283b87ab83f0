import { EventEmitter } from 'node:events';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Notifications } from '../db/notifications.ts';
import { notifyChannel } from '../db/notify.ts';
import { Unauthorized, type HttpError } from '../http/errors.ts';
import { tooManyRequests, type RateLimiter, type RateWait } from '../http/rate-limit.ts';
import type { KeyActor } from './actor.ts';
import { liveKeyByHash, recordKeyUse } from './api-key.store.ts';
import { API_KEY_PATTERN, hashApiKey } from './key-format.ts';

/** Channel on which any change to a key, a membership or what a key's profile shows is announced to every replica. */
export const AUTH_CHANNEL = 'vp_auth_changed';

/**
 * The same announcement inside this process, delivered at once: the NOTIFY reaches this replica's listener only after
 * a round trip, and the next request of the client that made the change must not find the old key in the cache.
 */
const localAuthChanges = new EventEmitter().setMaxListeners(0);

/**
 * Tells every replica through AUTH_CHANNEL (inside a transaction, at its commit) and this process's authenticators at
 * once. A key cached again before that commit is dropped again when the NOTIFY arrives.
 */
export async function announceAuthChange(em: EntityManager): Promise<void> {
  await notifyChannel(em, AUTH_CHANNEL);
  localAuthChanges.emit('change');
}

interface CacheEntry {
  actor: KeyActor;
  expiresAt: number;
}

/** Failed authentications allowed per client address in the rate-limit window, counted in PostgreSQL (every replica together). */
export interface FailedAuthLimit {
  limiter: RateLimiter;
  perWindow: number;
  windowSeconds: number;
}

function tooManyFailures(limit: FailedAuthLimit, wait: RateWait): HttpError {
  return tooManyRequests(
    `Too many failed authentications from this address (${limit.perWindow} per ${limit.windowSeconds} s)`,
    wait,
  );
}

/** Addresses remembered as over their failures at once; beyond this the oldest are forgotten (their next failure is counted again). */
const MAX_BLOCKED_ADDRESSES = 10_000;

/**
 * Resolves bearer keys to actors. Valid keys are cached per process; any key or membership change
 * is NOTIFYed on AUTH_CHANNEL and clears the caches of every replica, so revocation is immediate.
 * The TTL only bounds what a missed notification could cost. A job key works only while its job runs
 * (an attempt its host lost is refused until the host takes it back or the next attempt gets a key of its own).
 */
export class Authenticator {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly lastTouched = new Map<string, number>();
  /** Bumped on every invalidation, so a lookup that started before one does not refill the cache. */
  private generation = 0;

  /** Addresses over their failed authentications, until when (this process's clock): their unknown keys are not looked up meanwhile. */
  private readonly blocked = new Map<string, number>();

  private readonly em: EntityManager;
  private readonly log: Logger;
  private readonly ttlMs: number;
  private readonly touchEveryMs: number;
  private readonly failures: FailedAuthLimit | undefined;

  constructor(
    em: EntityManager,
    log: Logger,
    options: { ttlMs?: number; touchEveryMs?: number; failures?: FailedAuthLimit } = {},
  ) {
    this.em = em;
    this.log = log;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.touchEveryMs = options.touchEveryMs ?? 60_000;
    this.failures = options.failures;
  }

  listen(notifications: Notifications): void {
    notifications.on(AUTH_CHANNEL, () => this.invalidate());
    notifications.onReconnect(() => this.invalidate());
    localAuthChanges.on('change', this.invalidate);
  }

  /** Stops hearing this process's announcements (the server is closing). */
  close(): void {
    localAuthChanges.off('change', this.invalidate);
  }

  private readonly invalidate = (): void => {
    this.generation++;
    this.cache.clear();
  };

  /**
   * The key's actor. With a failure limit, `clientAddress` is charged one failure for each key that is not valid, and
   * once over the limit gets 429 for every key this process has not verified in the last minute (cached): the address
   * learns nothing more about which keys are valid until the window allows it again, while clients that were
   * already working from it (behind the same NAT or proxy) are not locked out.
   */
  async authenticate(key: string, clientAddress?: string): Promise<KeyActor> {
    const hash = API_KEY_PATTERN.test(key) ? hashApiKey(key) : undefined;
    const now = Date.now();
    const cached = hash === undefined ? undefined : this.cache.get(hash);
    const actor = cached && cached.expiresAt > now ? cached.actor : await this.verify(hash, now, clientAddress);
    this.touch(actor.keyId, now);
    return actor;
  }

  private async verify(hash: string | undefined, now: number, clientAddress: string | undefined): Promise<KeyActor> {
    const limit = clientAddress ? this.failures : undefined;
    if (limit) this.refuseIfBlocked(limit, clientAddress!, now);
    const actor = hash === undefined ? undefined : await this.lookup(hash, now);
    if (actor) return actor;
    if (limit) await this.countFailure(limit, clientAddress!);
    throw Unauthorized();
  }

  /** 429 without a lookup while the address is known to be over its failures. */
  private refuseIfBlocked(limit: FailedAuthLimit, clientAddress: string, now: number): void {
    const until = this.blocked.get(clientAddress);
    if (until === undefined) return;
    if (until > now) throw tooManyFailures(limit, { waitMs: until - now, nowMs: now });
    this.blocked.delete(clientAddress);
  }

  /** Charges the address one failure; 429, remembered until its wait is over, when it had none left. */
  private async countFailure(limit: FailedAuthLimit, clientAddress: string): Promise<void> {
    const refused = await limit.limiter.count(`auth-failures:ip:${clientAddress}`, limit.perWindow);
    if (!refused) return;
    this.block(clientAddress, Date.now() + refused.waitMs);
    throw tooManyFailures(limit, refused);
  }

  private block(clientAddress: string, until: number): void {
    if (this.blocked.size >= MAX_BLOCKED_ADDRESSES) {
      for (const [address, expiry] of this.blocked) if (expiry <= Date.now()) this.blocked.delete(address);
      if (this.blocked.size >= MAX_BLOCKED_ADDRESSES) this.blocked.delete(this.blocked.keys().next().value!);
    }
    this.blocked.set(clientAddress, until);
  }

  private async lookup(hash: string, now: number): Promise<KeyActor | undefined> {
    const generation = this.generation;
    const row = await liveKeyByHash(this.em, hash);
    if (!row || !row.role) return undefined;
    const actor: KeyActor = {
      kind: 'key',
      keyId: row.id,
      keyPrefix: row.prefix,
      workspaceId: row.workspace_id,
      workspaceHandle: row.handle,
      workspaceKind: row.kind,
      userId: row.user_id,
      username: row.username,
      role: row.role,
      jobScope: row.job_scope,
      deploymentId: row.deployment_id,
      profile: {
        workspaceName: row.workspace_name,
        region: row.region,
        workspaceCreatedAt: new Date(row.workspace_created_at).toISOString(),
        userName: row.user_name,
        teams: row.teams,
      },
    };
    if (generation === this.generation) this.cache.set(hash, { actor, expiresAt: now + this.ttlMs });
    return actor;
  }

  /** Records last use at most once a minute per key, off the request's path. */
  private touch(keyId: string, now: number): void {
    if (now - (this.lastTouched.get(keyId) ?? 0) < this.touchEveryMs) return;
    this.lastTouched.set(keyId, now);
    recordKeyUse(this.em, keyId, new Date(now)).catch((error) =>
      this.log.warn({ err: error }, 'could not record key use'),
    );
  }
}
