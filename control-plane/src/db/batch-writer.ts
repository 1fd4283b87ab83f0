// A queue of rows written in batches off the requests' path (every second, or once a batch is full), one write at a
// time and in order. A write that fails keeps its rows queued for the next; past `maxQueued` (the database down for
// long) the oldest are dropped, counted in the log. close() writes what is left, so a clean stop loses nothing.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';

const FLUSH_MS = 1000;

export interface BatchWriterOptions<Row> {
  fork: () => EntityManager;
  log: Logger;
  /** Inserts one batch (a table's store does it). */
  insert: (em: EntityManager, rows: Row[]) => Promise<void>;
  /** Rows per insert. */
  batchRows: number;
  maxQueued: number;
  /** What the rows are, for the log ("audit entries"). */
  what: string;
}

export class BatchWriter<Row> {
  private readonly options: BatchWriterOptions<Row>;
  private queue: Row[] = [];
  private writing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(options: BatchWriterOptions<Row>) {
    this.options = options;
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  record(row: Row): void {
    this.queue.push(row);
    if (this.queue.length > this.options.maxQueued) {
      const dropped = this.queue.splice(0, this.queue.length - this.options.maxQueued);
      this.options.log.error(
        { dropped: dropped.length },
        `${this.options.what} dropped: the database is not keeping up`,
      );
    }
    if (this.queue.length >= this.options.batchRows) void this.flush();
  }

  /** Writes everything queued so far (after a write under way). Never rejects: failures are logged and kept. */
  flush(): Promise<void> {
    this.writing = this.writing.then(() => this.write());
    return this.writing;
  }

  /** Stops the timer and writes what is left (shutdown, before the pool closes). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async write(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, this.options.batchRows);
      try {
        await this.options.insert(this.options.fork(), batch);
      } catch (error) {
        this.options.log.warn(
          { err: error, rows: batch.length },
          `writing ${this.options.what} failed; retrying with the next flush`,
        );
        return;
      }
      this.queue.splice(0, batch.length);
    }
  }
}
