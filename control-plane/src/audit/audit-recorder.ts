import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { BatchWriter } from '../db/batch-writer.ts';
import { insertAuditEntries, type AuditRecord } from './audit.store.ts';

/** Rows per INSERT (10 parameters each, far under PostgreSQL's 65,535). */
const BATCH_ROWS = 500;
/** Past this many queued entries (the database down for long) the oldest are dropped, loudly. */
const MAX_QUEUED = 200_000;

/**
 * The process's audit writer (db/batch-writer.ts): entries are inserted in batches off the requests' path. flush()
 * writes what is queued now (before a read of the log, for a named action before its answer); close() on shutdown,
 * after the last request and before the pool closes, so a clean stop loses nothing.
 */
export class AuditRecorder extends BatchWriter<AuditRecord> {
  constructor(fork: () => EntityManager, log: Logger) {
    super({
      fork,
      log,
      insert: insertAuditEntries,
      batchRows: BATCH_ROWS,
      maxQueued: MAX_QUEUED,
      what: 'audit entries',
    });
  }
}
