import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import { TRASH_DAYS } from '../datasets/dataset.service.ts';
import type { Storage } from '../storage/storage.ts';
import { eraseTrash, type EraseResult } from './trash-erase.ts';

/**
 * Permanently deletes what has been in trash longer than 30 days at `now` (a parameter so tests can move
 * the clock): projects with their models, models trashed alone, datasets no job is working on. Safe on
 * several replicas at once: every item is claimed with SKIP LOCKED, so each is deleted by one runner.
 */
export function purgeExpired(em: EntityManager, storage: Storage, now: Date): Promise<EraseResult> {
  return eraseTrash(em, storage, { deletedBefore: new Date(now.getTime() - TRASH_DAYS * 86_400_000) });
}

/**
 * Hourly, at a minute drawn per process so replicas do not all start together (running together is safe,
 * only wasteful). Each run works in its own EntityManager fork.
 */
export function scheduleTrashPurge(fork: () => EntityManager, storage: Storage, log: Logger): ScheduledTask {
  return cron.schedule(
    `${randomInt(60)} * * * *`,
    async () => {
      try {
        const purged = await purgeExpired(fork(), storage, new Date());
        if (purged.deletedCount) log.info(purged, 'trash purged');
      } catch (error) {
        log.warn({ err: error }, 'trash purge failed');
      }
    },
    { name: 'trash-purge', noOverlap: true },
  );
}
