import type { Notifications } from '../db/notifications.ts';
import { EXPORTS_SETTLED_CHANNEL } from './export.store.ts';

/** The longest a read of one export may wait for it to end (GET …/exports/{id}?wait=). */
export const MAX_EXPORT_WAIT_SECONDS = 30;

/**
 * Reads of exports waiting for them to end (a long poll: the client learns of the end as it happens, not at its next
 * poll). settleExport announces every end on EXPORTS_SETTLED_CHANNEL at its commit, to every replica; a lost
 * notification connection wakes every waiter, since an end may have gone unheard.
 */
export class ExportWaits {
  private readonly waiting = new Map<string, Set<() => void>>();
  private closed = false;

  listen(notifications: Notifications): void {
    notifications.on(EXPORTS_SETTLED_CHANNEL, (exportId) => this.wake(exportId));
    notifications.onReconnect(() => this.wakeAll());
  }

  /**
   * Reads the export until `ended` holds of what `read` gave, re-reading after each announced end of it, at most
   * `seconds` in all; a request that went away (`signal`) or a process shutting down stops the wait early.
   */
  async readUntil<T>(
    exportId: string,
    seconds: number,
    signal: AbortSignal,
    read: () => Promise<T>,
    ended: (value: T) => boolean,
  ): Promise<T> {
    const deadline = performance.now() + seconds * 1000;
    for (;;) {
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      // Listening before reading: an end committed between the read and the wait still wakes it.
      this.add(exportId, wake);
      try {
        const value = await read();
        const left = deadline - performance.now();
        if (ended(value) || left <= 0 || signal.aborted || this.closed) return value;
        const timer = setTimeout(wake, left);
        signal.addEventListener('abort', wake, { once: true });
        await woken;
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
      } finally {
        this.remove(exportId, wake);
      }
    }
  }

  /** Shutdown: every wait answers with what it reads now, and no new one waits. */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  private add(exportId: string, wake: () => void): void {
    const waiters = this.waiting.get(exportId) ?? new Set();
    waiters.add(wake);
    this.waiting.set(exportId, waiters);
  }

  private remove(exportId: string, wake: () => void): void {
    const waiters = this.waiting.get(exportId);
    waiters?.delete(wake);
    if (waiters?.size === 0) this.waiting.delete(exportId);
  }

  private wake(exportId: string): void {
    for (const wake of this.waiting.get(exportId) ?? []) wake();
  }

  private wakeAll(): void {
    for (const waiters of this.waiting.values()) for (const wake of waiters) wake();
  }
}
