import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { purgeAuditEntries } from './audit.store.ts';

/** Entries one statement deletes: a short transaction each, however far behind the purge is. */
const PURGE_BATCH = 5000;

/** Deletes the entries older than `retentionDays` at `now` (a parameter so tests can move the clock); returns how many. */
export async function purgeAudit(em: EntityManager, retentionDays: number, now: Date): Promise<number> {
  const before = new Date(now.getTime() - retentionDays * 86_400_000);
  let purged = 0;
  for (;;) {
    const deleted = await purgeAuditEntries(em, before, PURGE_BATCH);
    purged += deleted;
    if (deleted < PURGE_BATCH) return purged;
  }
}

/**
 * Hourly, at a minute drawn per process (as the trash purge): replicas purging together skip each other's rows. Each
 * run works in its own EntityManager fork.
 */
export function scheduleAuditPurge(fork: () => EntityManager, retentionDays: number, log: Logger): ScheduledTask {
  return cron.schedule(
    `${randomInt(60)} * * * *`,
    async () => {
      try {
        const purged = await purgeAudit(fork(), retentionDays, new Date());
        if (purged) log.info({ purged, retentionDays }, 'audit log purged');
      } catch (error) {
        log.warn({ err: error }, 'audit log purge failed');
      }
    },
    { name: 'audit-purge', noOverlap: true },
  );
}
