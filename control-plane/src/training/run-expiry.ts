// Runs on users' own machines end even when their trainer never says so (a crash, Ctrl-C, a machine switched
// off): whatever stops reporting is ended by the platform. Runs of training jobs are not touched here: their job
// ends them (a lost host is noticed by its heartbeats).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { endRun } from './run-status.ts';
import { lockSilentOwnComputeRuns } from './training-run.store.ts';

export interface RunSilenceLimits {
  /** TRAINING_RUN_SILENCE_SECONDS: a run not heard of this long is taken for dead (failed). */
  silenceSeconds: number;
  /** TRAINING_CANCEL_GRACE_SECONDS: a run asked to cancel and not heard of this long ends cancelled. */
  cancelGraceSeconds: number;
}

/** Runs ended per transaction: a backlog (say, after a long outage) is worked off in short transactions. */
const BATCH = 100;

/** "90 minutes", "24 hours", "45 seconds": the silence as the failure reason says it. */
function duration(seconds: number): string {
  const [amount, unit] =
    seconds % 3600 === 0
      ? [seconds / 3600, 'hour']
      : seconds % 60 === 0
        ? [seconds / 60, 'minute']
        : [seconds, 'second'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'}`;
}

export function silenceReason(silenceSeconds: number): string {
  return `No report from the trainer for ${duration(silenceSeconds)}; its machine may have stopped`;
}

/**
 * Ends the silent runs on users' own machines: cancelled when a cancel was asked and the trainer stayed silent
 * past the cancel grace, failed when it stayed silent past the silence limit. Safe on every replica at once: rows
 * are claimed with SKIP LOCKED (a run a webhook is writing to is skipped, it is alive) and ended by guarded
 * UPDATEs. Returns how many runs it ended.
 */
export async function expireSilentRuns(em: EntityManager, limits: RunSilenceLimits): Promise<number> {
  let ended = 0;
  for (;;) {
    const batch = await em.transactional(async (tx) => {
      const runs = await lockSilentOwnComputeRuns(tx, limits.silenceSeconds, limits.cancelGraceSeconds, BATCH);
      for (const run of runs) {
        await endRun(
          tx,
          run.id,
          run.cancel_requested
            ? { outcome: 'cancelled', error: null }
            : { outcome: 'failed', error: silenceReason(limits.silenceSeconds) },
        );
      }
      return runs.length;
    });
    ended += batch;
    if (batch < BATCH) return ended;
  }
}

/**
 * Sweeps every quarter of the shorter limit, kept between 1 s and 1 min (15 s with the defaults): a run ends at most
 * that long after its limit. Every replica runs one; they never end a run twice (see expireSilentRuns).
 */
export function scheduleRunExpiry(
  fork: () => EntityManager,
  limits: RunSilenceLimits,
  log: Logger,
): { stop(): Promise<void> } {
  const everyMs =
    1000 * Math.min(60, Math.max(1, Math.floor(Math.min(limits.silenceSeconds, limits.cancelGraceSeconds) / 4)));
  let sweeping: Promise<void> | undefined;
  const timer = setInterval(() => {
    sweeping ??= expireSilentRuns(fork(), limits)
      .then((ended) => void (ended && log.info({ ended }, 'silent training runs ended')))
      .catch((error) => log.warn({ err: error }, 'training run expiry failed'))
      .finally(() => (sweeping = undefined));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
